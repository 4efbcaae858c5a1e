import { isFleetlimitError, OptionError, type StoreError } from '../common/errors.js'
import { checkInteger } from '../common/validate.js'
import type { Decision } from '../limiter/decision.js'
import type { CallLimit, RateLimiter } from '../limiter/limiter-types.js'
import { MAX_CONCURRENCY, MAX_LIMIT } from '../limiter/policy.js'
import type { FrameworkInfo, HttpOutcome, RequestInfo } from './adapter-contract.js'
import { createDefaultDenial, customBody, NEXT, respond, STORE_UNAVAILABLE, sized } from './answers.js'
import { checkTenantIpv6, createAddressWarnings, createWarnOnce } from './config-warnings.js'
import { createRouteNames } from './default-route.js'
import { rateLimitHeaders, retryAfterSeconds } from './headers.js'
import type { HttpRateLimitOptions } from './http-options.js'
import { answeredDenial, deniedInFlightOnly } from './in-flight.js'
import { addressTenant, ipTenant } from './ip.js'
import { createRequestCounts } from './request-counts.js'
import { createRequestFailure } from './request-failure.js'
import { resolveHttpOptions } from './resolved-http-options.js'
import { createSettler, type Settler } from './settle.js'

export interface HttpLimiter<Req extends object, Res = unknown> extends Settler<Req, Res> {
  readonly limiter: RateLimiter
  handle(req: Req, info: RequestInfo): Promise<HttpOutcome>
}

const NEXT_NOW = Promise.resolve(NEXT)

/**
 * The request-level limiter behind every adapter: options are validated here once, and every header value
 * and body is computed here, so that Express, Koa and Fastify answer byte for byte alike.
 *
 * @example
 * ```ts
 * const http = createHttpLimiter<MyRequest>(options, { name: 'MyFramework', trustProxyHint: '…', trustAllHint: '…' })
 * // per request: read a RequestInfo off the framework's request, then apply the outcome
 * const outcome = await http.handle(req, info)
 * if (outcome.action === 'respond') reply(outcome.status, outcome.headers, outcome.body)
 * ```
 */
export function createHttpLimiter<Req extends object, Res = unknown>(
  options: HttpRateLimitOptions<Req, Res>,
  framework: FrameworkInfo,
  /** The one-time warnings already given: one set shared by an adapter's limiters warns once for all. */
  warned: Set<string> = new Set(),
): HttpLimiter<Req, Res> {
  const resolved = resolveHttpOptions(options)
  const { limiter, tenantOf, routeOf, skip, onLimited, costOf, limitOf, unlimited, message } = resolved
  const { statusCode, concurrencyStatusCode, ipv6Subnet, maxCost, headerOptions } = resolved
  const { concurrencyOf, ownInFlight, rateName, inFlight } = resolved
  const counts = createRequestCounts(limiter)
  const warnOnce = createWarnOnce(resolved.logger, warned)
  const addressWarnings = createAddressWarnings(framework, warnOnce)
  const defaultDenial = createDefaultDenial(statusCode)
  const busyDenial = concurrencyStatusCode === statusCode ? defaultDenial : createDefaultDenial(concurrencyStatusCode)
  const settler = createSettler(resolved, warnOnce)
  const failed = createRequestFailure(resolved.onError, warnOnce)

  /** The default tenant: the client address, grouped; a value that is not an address is kept, and said once. */
  function ipTenantOf(info: RequestInfo): string {
    addressWarnings.checkProxy(info)
    const { ip } = info
    if (!ip) return ipTenant(ip)
    const tenant = addressTenant(ip, ipv6Subnet)
    if (tenant !== undefined) return tenant
    addressWarnings.notAnIp(ip)
    return ip
  }

  async function customDenial(req: Req, decision: Decision) {
    return sized(customBody(typeof message === 'function' ? await message(req, decision) : message))
  }

  // No function of the request's to call: a request goes from its info to the limiter and to its answer with no
  // promise but the limiter's and no closure. The same steps as decide(), without the options it has not.
  const direct =
    !skip &&
    !tenantOf &&
    !routeOf &&
    !costOf &&
    !limitOf &&
    !concurrencyOf &&
    !onLimited &&
    typeof message !== 'function'
  const routes = createRouteNames()

  function decideDirect(req: Req, info: RequestInfo): Promise<HttpOutcome> {
    const key = { tenant: ipTenantOf(info), route: routes.of(info) }
    const earlier = counts.earlier(req, key, undefined)
    if (earlier) return earlier.then((decision) => reused(decision, req))
    const call = limiter.consume(key)
    counts.counted(req, key, undefined, call)
    return call.then(plainAnswer, storeFailure)
  }
  const plainAnswer = (decision: Decision) => answer(decision)

  /**
   * A request whose every key an earlier middleware counted: through on its decision, with no headers of its own
   * (the earlier ones are on the response) and nothing to settle (the earlier middleware releases and refunds).
   */
  function reused(decision: Decision, req: Req): HttpOutcome | Promise<HttpOutcome> {
    return decision.allowed ? NEXT : answer(decision, req)
  }

  /** The answer to a store error that the policy fails closed on: a 503 the client can retry. */
  function storeFailure(error: unknown): HttpOutcome {
    if (!isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE')) throw error
    const retryAfter = String(retryAfterSeconds((error as StoreError).retryAfterMs))
    return respond(503, { 'retry-after': retryAfter }, STORE_UNAVAILABLE, undefined)
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

  async function decide(req: Req, info: RequestInfo): Promise<HttpOutcome> {
    if (skip && (await skip(req))) return NEXT
    const tenant = tenantOf ? await tenantOf(req) : ipTenantOf(info)
    if (typeof tenant !== 'string') {
      throw new OptionError(
        'tenant(req)',
        tenant,
        "a string: the tenant of this request (for requests without one, such as a missing API key, return a shared tenant like 'anonymous', or skip them with skip(req))",
      )
    }
    if (tenantOf) checkTenantIpv6(tenant, warnOnce)
    const route = routeOf ? routeOf(req) : routes.of(info)
    const cost = costOf ? await costOf(req) : undefined
    const limit = limitOf ? await limitOf(req) : undefined
    if (typeof limit === 'number') checkInteger(limit, 'limit(req)', 1, MAX_LIMIT)
    else if (limitOf && !namesLimit(limit, unlimited)) {
      const map = unlimited === undefined ? '' : `, or a map that gives policy '${unlimited}' its limit`
      throw new OptionError('limit(req)', limit, `a whole number from 1 to ${MAX_LIMIT}${map}`)
    }
    // Under the policies' own limits, a cost is checked here, under the name of the function that gave it.
    if (cost !== undefined) checkInteger(cost, 'cost(req)', 1, limit === undefined ? maxCost : MAX_LIMIT)
    const concurrency = concurrencyOf ? await concurrencyOf(req) : undefined
    if (concurrencyOf) checkInteger(concurrency, 'concurrency(req)', 1, MAX_CONCURRENCY)
    const limits = callLimit(limit, concurrency)

    const key = { tenant, ...(route !== undefined && { route }) }
    const earlier = counts.earlier(req, key, cost)
    if (earlier) return earlier.then((decision) => reused(decision, req))
    const call = limiter.consume(
      key,
      cost === undefined && limits === undefined
        ? undefined
        : { ...(cost !== undefined && { cost }), ...(limits !== undefined && { limit: limits }) },
    )
    counts.counted(req, key, cost, call)
    return call.then((decision) => answer(decision, req), storeFailure)
  }

  /**
   * The call's limits with the `concurrency` option's in-flight policy beside the others: by policy name, a bare
   * number from limit(req) being the one other policy's, and concurrency(req) the in-flight policy's.
   */
  function callLimit(limit: CallLimit | undefined, concurrency: number | undefined): CallLimit | undefined {
    if (ownInFlight === undefined) return limit
    const byName = typeof limit === 'number' && rateName !== undefined ? { [rateName]: limit } : limit
    // A bare number with several policies beside it: the limiter refuses it, as it names no policy.
    if (concurrency === undefined || typeof byName === 'number') return byName
    return { ...byName, [ownInFlight]: concurrency }
  }

  return {
    limiter,
    handle(req, info) {
      // A request that passes this middleware twice (nested routers, a re-dispatch), or another built on the same
      // limiter, counts once; one built on another limiter counts it once per store key (see RequestCounts).
      if (!counts.enter(req)) return NEXT_NOW
      let outcome: Promise<HttpOutcome>
      try {
        outcome = direct ? decideDirect(req, info) : decide(req, info)
      } catch (error) {
        outcome = Promise.reject(error)
      }
      return outcome.then(undefined, (error: unknown) => failed(req, error))
    },
    settles: settler.settles,
    settle: settler.settle,
    stats: settler.stats,
  }
}

/** Whether limit(req)'s result is a map, one with an own entry for the policy `name` when one is given. */
function namesLimit(limit: unknown, name: string | undefined): boolean {
  if (typeof limit !== 'object' || limit === null) return false
  return name === undefined || (Object.hasOwn(limit, name) && (limit as Record<string, unknown>)[name] !== undefined)
}
