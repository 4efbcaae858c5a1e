import { describe, type FleetlimitError, isFleetlimitError, OptionError, type StoreError } from '../common/errors.js'
import { checkInteger } from '../common/validate.js'
import type { Decision } from '../limiter/decision.js'
import type { RateLimiter } from '../limiter/limiter.js'
import { MAX_LIMIT } from '../limiter/policy.js'
import {
  createDefaultDenial,
  customBody,
  type HttpOutcome,
  requestError,
  respond,
  STORE_UNAVAILABLE,
  sized,
} from './answers.js'
import { checkTenantIpv6, createAddressWarnings, createWarnOnce } from './config-warnings.js'
import { defaultRoute } from './default-route.js'
import { rateLimitHeaders, retryAfterSeconds } from './headers.js'
import {
  type FrameworkInfo,
  type HttpRateLimitOptions,
  type RequestErrorAction,
  type RequestInfo,
  resolveHttpOptions,
} from './http-options.js'
import { addressTenant, ipTenant } from './ip.js'
import { createSettler, type Settler } from './settle.js'

export interface HttpLimiter<Req extends object, Res = unknown> extends Settler<Req, Res> {
  readonly limiter: RateLimiter
  handle(req: Req, info: RequestInfo): Promise<HttpOutcome>
}

/**
 * The requests each limiter has counted, so that every middleware built on one limiter counts a request once: weak
 * both ways, so neither a limiter nor a request is kept for it.
 */
const countedByLimiter = new WeakMap<RateLimiter, WeakSet<object>>()

function countedBy(limiter: RateLimiter): WeakSet<object> {
  let counted = countedByLimiter.get(limiter)
  if (!counted) {
    counted = new WeakSet()
    countedByLimiter.set(limiter, counted)
  }
  return counted
}

const NEXT: HttpOutcome = Object.freeze({ action: 'next', headers: Object.freeze({}), decision: undefined })

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
  const { limiter, tenantOf, routeOf, skip, onLimited, onError, costOf, limitOf, unlimited, message } = resolved
  const { statusCode, ipv6Subnet, maxCost, headerOptions } = resolved
  const counted = countedBy(limiter)
  const warnOnce = createWarnOnce(resolved.logger, warned)
  const addressWarnings = createAddressWarnings(framework, warnOnce)
  const defaultDenial = createDefaultDenial(statusCode)
  const settler = createSettler(resolved, warnOnce)

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

  return {
    limiter,
    async handle(req, info) {
      // A request that passes this middleware twice (nested routers, a re-dispatch), or another built on the same
      // limiter, counts once.
      if (counted.has(req)) return NEXT
      counted.add(req)
      try {
        return await decide(req, info)
      } catch (error) {
        return failed(req, error)
      }
    },
    settles: settler.settles,
    settle: settler.settle,
    stats: settler.stats,
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
    const route = routeOf ? routeOf(req) : defaultRoute(info)
    const cost = costOf ? await costOf(req) : undefined
    const limit = limitOf ? await limitOf(req) : undefined
    if (typeof limit === 'number') checkInteger(limit, 'limit(req)', 1, MAX_LIMIT)
    else if (limitOf && !namesLimit(limit, unlimited)) {
      const map = unlimited === undefined ? '' : `, or a map that gives policy '${unlimited}' its limit`
      throw new OptionError('limit(req)', limit, `a whole number from 1 to ${MAX_LIMIT}${map}`)
    }
    // Under the policies' own limits, a cost is checked here, under the name of the function that gave it.
    if (cost !== undefined) checkInteger(cost, 'cost(req)', 1, limit === undefined ? maxCost : MAX_LIMIT)

    let decision: Decision
    try {
      decision = await limiter.consume(
        { tenant, ...(route !== undefined && { route }) },
        cost === undefined && limit === undefined
          ? undefined
          : { ...(cost !== undefined && { cost }), ...(limit !== undefined && { limit }) },
      )
    } catch (error) {
      if (!isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE')) throw error
      const retryAfter = String(retryAfterSeconds((error as StoreError).retryAfterMs))
      return respond(503, { 'retry-after': retryAfter }, STORE_UNAVAILABLE, undefined)
    }
    const headers = rateLimitHeaders(decision, headerOptions)
    if (decision.allowed) {
      // A shadow policy's denial is reported as a denial is, and let through.
      if (decision.shadowDenied && onLimited) await onLimited(req, decision)
      return { action: 'next', headers, decision }
    }
    if (onLimited) await onLimited(req, decision)
    const body = message === undefined ? defaultDenial(decision) : await customDenial(req, decision)
    return respond(statusCode, headers, body, decision)
  }

  /** A request that could not be decided on: what onError says, else the default for the error. */
  async function failed(req: Req, error: unknown): Promise<HttpOutcome> {
    const ours = isFleetlimitError(error)
    let action: unknown = onError ? await onError(error, req) : undefined
    if (action !== undefined && !ERROR_ACTIONS.includes(action as RequestErrorAction)) {
      const got = describe(action)
      warnOnce(
        'on-error-result',
        () => `onError(error, req) returned ${got}, not 'respond', 'allow' or 'throw': such requests get the default.`,
      )
      action = undefined
    }
    action ??= ours ? 'respond' : 'throw'
    if (action === 'throw') throw error
    if (action === 'allow') return NEXT
    const option = ours && error instanceof OptionError ? error.option : undefined
    if (ours && !onError) {
      const text = (error as Error).message.replace(/^fleetlimit: /, '')
      warnOnce(
        `request-error ${(error as FleetlimitError).code} ${option ?? ''}`,
        () =>
          `a request could not be rate limited, so it was answered 500 (application/problem+json): ${text} ` +
          'Later requests failing the same way get the same answer, unlogged; pass onError(error, req) to decide what they get.',
      )
    }
    return respond(500, {}, requestError(ours ? (error as FleetlimitError).code : undefined, option), undefined)
  }
}

const ERROR_ACTIONS: readonly RequestErrorAction[] = ['respond', 'allow', 'throw']

/** Whether limit(req)'s result is a map, one with an own entry for the policy `name` when one is given. */
function namesLimit(limit: unknown, name: string | undefined): boolean {
  if (typeof limit !== 'object' || limit === null) return false
  return name === undefined || (Object.hasOwn(limit, name) && (limit as Record<string, unknown>)[name] !== undefined)
}
