import { OptionError } from '../common/errors.js'
import type { Decision } from '../limiter/decision.js'
import type { HttpOutcome } from './adapter-contract.js'
import { retryAfterSeconds } from './headers.js'

/** A response body with its media type. */
export interface ResponseBody {
  readonly contentType: string
  readonly body: string
}

const QUOTA_EXCEEDED = 'https://iana.org/assignments/http-problem-types#quota-exceeded'

/**
 * The default denial: an RFC 9457 problem document of the quota-exceeded type, naming the violated
 * policies (the `violated-policies` member the RateLimit draft defines) and the wait in seconds.
 */
export function quotaExceededBody(decision: Decision, status: number): ResponseBody {
  // A shadow policy violates nothing: it only measures.
  const violated = (decision.policies ?? [decision]).filter((d) => !d.allowed && !d.shadow).map((d) => d.policy)
  const retryAfter = retryAfterSeconds(decision.retryAfterMs)
  const problem = {
    type: QUOTA_EXCEEDED,
    title: 'Too Many Requests',
    status,
    detail: `Quota exceeded for policy "${decision.policy}"; retry in ${retryAfter} s.`,
    'violated-policies': violated,
    'retry-after': retryAfter,
  }
  return { contentType: 'application/problem+json', body: JSON.stringify(problem) }
}

/** The answer while the store is failing and the policy fails closed: the client did nothing wrong. */
export function storeUnavailableBody(): ResponseBody {
  const problem = {
    type: 'about:blank',
    title: 'Service Unavailable',
    status: 503,
    detail: 'The rate limiter cannot reach its store; retry shortly.',
  }
  return { contentType: 'application/problem+json', body: JSON.stringify(problem) }
}

/** A user's `message`: a string is sent as text, anything else as JSON. */
export function customBody(message: unknown): ResponseBody {
  return typeof message === 'string'
    ? { contentType: 'text/plain; charset=utf-8', body: message }
    : { contentType: 'application/json; charset=utf-8', body: JSON.stringify(message) }
}

/**
 * The default answer to a request the limiter could not decide on (a `tenant(req)` that returned no string, a
 * `cost(req)` above the limit, `app.use(rateLimit)` without the call): the server's fault, so a 500. `code` is
 * the error's stable code; the full message goes to the log, not to the client.
 */
export function requestErrorBody(detail: string, code?: string): ResponseBody {
  const problem = {
    type: 'about:blank',
    title: 'Internal Server Error',
    status: 500,
    detail,
    ...(code !== undefined && { code }),
  }
  return { contentType: 'application/problem+json', body: JSON.stringify(problem) }
}

/** Through, with no headers and no decision: a request skipped, or one counted already. */
export const NEXT: HttpOutcome = Object.freeze({ action: 'next', headers: Object.freeze({}), decision: undefined })

/** A body with its byte length, made once for the answers that repeat. */
export type SizedBody = ResponseBody & { readonly length: string }
export const sized = (body: ResponseBody): SizedBody => ({ ...body, length: String(Buffer.byteLength(body.body)) })
export const STORE_UNAVAILABLE = sized(storeUnavailableBody())

/** A response: the headers are the caller's fresh record, completed here. */
export function respond(
  status: number,
  headers: Record<string, string>,
  { contentType, body, length }: SizedBody,
  decision: Decision | undefined,
) {
  headers['content-type'] = contentType
  headers['content-length'] = length
  return { action: 'respond', status, headers, body, decision } as const
}

/**
 * The default denial, for one denial status. It depends only on the policies denied and the whole seconds to
 * wait: a request denied again in the same second gets the body (and its byte length) made for the first.
 */
export function createDefaultDenial(status: number): (decision: Decision) => SizedBody {
  const denials = new Map<string, SizedBody>()
  return (decision) => {
    const retryAfter = retryAfterSeconds(decision.retryAfterMs)
    const denied = decision.policies?.filter((d) => !d.allowed && !d.shadow).map((d) => d.policy) ?? ''
    const id = `${retryAfter} ${decision.policy} ${denied}`
    let body = denials.get(id)
    if (!body) {
      if (denials.size >= 1_000) denials.clear()
      body = sized(quotaExceededBody(decision, status))
      denials.set(id, body)
    }
    return body
  }
}

/** The 500 for a request error, by code and option: a handful of kinds, each body made once. */
const requestErrors = new Map<string, SizedBody>()
export function requestError(code: string | undefined, option: string | undefined): SizedBody {
  const id = `${code} ${option}`
  let body = requestErrors.get(id)
  if (!body) {
    const detail =
      option === undefined
        ? 'The rate limiter could not decide on this request.'
        : `The rate limiter could not decide on this request: invalid \`${option}\`.`
    if (requestErrors.size >= 100) requestErrors.clear()
    body = sized(requestErrorBody(detail, code))
    requestErrors.set(id, body)
  }
  return body
}

/** Adapters whose factory was used as the middleware, by app (`req.app`, `ctx.app`): each is told once. */
const misusedIn = new WeakSet<object>()

/**
 * For an adapter whose `rateLimit` the framework called as middleware: `app.use(rateLimit)` instead of
 * `app.use(rateLimit({ … }))` (Express calls it with `(req, res, next)`, Koa with `(ctx, next)`). The answer to
 * send, the same 500 problem+json as a request error, naming the fix; the console is told once per `app`.
 */
export function factoryMisuse(app: object | undefined): Extract<HttpOutcome, { action: 'respond' }> {
  const error = new OptionError('rateLimit', undefined, FACTORY_FIX, 'misuse')
  if (app === undefined || !misusedIn.has(app)) {
    if (app !== undefined) misusedIn.add(app)
    console.warn(error.message)
  }
  return respond(500, {}, MISUSE, undefined)
}
const FACTORY_FIX = "rateLimit is a factory: call it with options, app.use(rateLimit({ limit: 100, window: '1m' }))"
const MISUSE = sized(requestErrorBody(FACTORY_FIX, 'ERR_FLEETLIMIT_OPTION'))
