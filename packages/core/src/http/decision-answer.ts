// The outcome of a limiter's decision on a request: through with its RateLimit headers, or the denial with its
// status and body (onLimited told first); and the 503 for a store error that the policy fails closed on.
import { isFleetlimitError, type StoreError } from '../common/errors.js'
import type { Decision } from '../limiter/decision.js'
import type { HttpOutcome } from './adapter-contract.js'
import { createDefaultDenial, customBody, respond, STORE_UNAVAILABLE, sized } from './answers.js'
import { rateLimitHeaders, retryAfterSeconds } from './headers.js'
import { answeredDenial, deniedInFlightOnly } from './in-flight.js'
import type { ResolvedHttpOptions } from './resolved-http-options.js'

/** The answer to a store error that the policy fails closed on: a 503 the client can retry. */
export function storeFailure(error: unknown): HttpOutcome {
  if (!isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE')) throw error
  const retryAfter = String(retryAfterSeconds((error as StoreError).retryAfterMs))
  return respond(503, { 'retry-after': retryAfter }, STORE_UNAVAILABLE, undefined)
}

/** The answer to each request's decision under an adapter's options: its statuses, message and onLimited. */
export function createDecisionAnswer<Req, Res>(
  resolved: ResolvedHttpOptions<Req, Res>,
): (decision: Decision, req?: Req) => HttpOutcome | Promise<HttpOutcome> {
  const { onLimited, message, statusCode, concurrencyStatusCode, headerOptions, inFlight } = resolved
  const defaultDenial = createDefaultDenial(statusCode)
  const busyDenial = concurrencyStatusCode === statusCode ? defaultDenial : createDefaultDenial(concurrencyStatusCode)

  async function customDenial(req: Req, decision: Decision) {
    return sized(customBody(typeof message === 'function' ? await message(req, decision) : message))
  }

  /**
   * The outcome of a decision: through with its headers, or the denial (onLimited told first). `req` is only
   * read by onLimited and a message function, which a direct decision has not.
   */
  function answer(decision: Decision, req?: Req): HttpOutcome | Promise<HttpOutcome> {
    if (decision.allowed) {
      const headers = rateLimitHeaders(decision, headerOptions)
      // A shadow policy's denial is reported as a denial is, and let through.
      if (decision.shadowDenied && onLimited) return reportShadow(req as Req, decision, headers)
      return through(headers, decision)
    }
    // The client is told a slot's wait as a client can use it (see answeredDenial): in the headers and the body,
    // a message function's too. The handler and onLimited get the limiter's decision.
    const busy = inFlight.size > 0 && deniedInFlightOnly(decision, inFlight)
    const told = inFlight.size > 0 ? answeredDenial(decision, inFlight) : decision
    const headers = rateLimitHeaders(told, headerOptions)
    const status = busy ? concurrencyStatusCode : statusCode
    if (!onLimited && message === undefined) {
      return respond(status, headers, (busy ? busyDenial : defaultDenial)(told), decision)
    }
    return deny(req as Req, decision, headers, status, told)
  }

  const through = (headers: Record<string, string>, decision: Decision): HttpOutcome => ({
    action: 'next',
    headers,
    decision,
  })

  async function reportShadow(req: Req, decision: Decision, headers: Record<string, string>): Promise<HttpOutcome> {
    await (onLimited as NonNullable<typeof onLimited>)(req, decision)
    return through(headers, decision)
  }

  async function deny(
    req: Req,
    decision: Decision,
    headers: Record<string, string>,
    status: number,
    told: Decision,
  ): Promise<HttpOutcome> {
    if (onLimited) await onLimited(req, decision)
    const body =
      message !== undefined ? await customDenial(req, told) : (status === statusCode ? defaultDenial : busyDenial)(told)
    return respond(status, headers, body, decision)
  }

  return answer
}
