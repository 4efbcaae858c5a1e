import { OptionError } from '../common/errors.js'
import { checkInteger } from '../common/validate.js'
import type { Decision } from '../limiter/decision.js'
import type { CallLimit, RateLimiter } from '../limiter/limiter-types.js'
import { MAX_CONCURRENCY, MAX_LIMIT } from '../limiter/policy.js'
import type { FrameworkInfo, HttpOutcome, RequestInfo } from './adapter-contract.js'
import { NEXT } from './answers.js'
import { checkTenantIpv6, createAddressWarnings, createWarnOnce } from './config-warnings.js'
import { createDecisionAnswer, storeFailure } from './decision-answer.js'
import { createRouteNames } from './default-route.js'
import type { HttpRateLimitOptions } from './http-options.js'
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
  const { ipv6Subnet, maxCost, concurrencyOf, ownInFlight, rateName } = resolved
  const counts = createRequestCounts(limiter)
  const warnOnce = createWarnOnce(resolved.logger, warned)
  const addressWarnings = createAddressWarnings(framework, warnOnce)
  const settler = createSettler(resolved, warnOnce)
  const failed = createRequestFailure(resolved.onError, warnOnce)
  const answer = createDecisionAnswer(resolved)

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
