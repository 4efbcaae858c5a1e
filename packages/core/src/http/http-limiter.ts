import { parseDuration } from '../common/duration.js'
import { describe, type FleetlimitError, isFleetlimitError, OptionError, type StoreError } from '../common/errors.js'
import {
  checkBoolean,
  checkInteger,
  checkOneOf,
  checkOptionNames,
  optionalFunction,
  optionNames,
} from '../common/validate.js'
import type { Decision } from '../limiter/decision.js'
import {
  type CallLimit,
  createRateLimiter,
  type Logger,
  type RateLimiter,
  type RefundResult,
} from '../limiter/limiter.js'
import type { LocalOptions } from '../limiter/local-tier.js'
import {
  MAX_LIMIT,
  POLICY_ACCEPTS,
  POLICY_OPTION_NAMES,
  POLICY_OPTIONS,
  type Policy,
  type PolicyOptions,
} from '../limiter/policy.js'
import type { Store } from '../store/store.js'
import { type HeaderStandard, rateLimitHeaders } from './headers.js'
import { addressTenant, ipTenant } from './ip.js'
import { customBody, quotaExceededBody, type ResponseBody, requestErrorBody, storeUnavailableBody } from './problem.js'

type MaybePromise<T> = T | Promise<T>

/**
 * What a request the limiter could not decide on gets (see `onError`): `'respond'`, a 500 problem+json;
 * `'allow'`, through, uncounted; `'throw'`, the error handed to the framework's error handling.
 */
export type RequestErrorAction = 'respond' | 'allow' | 'throw'

/**
 * The options every adapter's `rateLimit` takes; `Req` is the framework's request (or context), `Res` its
 * response (Koa's is the context again).
 */
export interface HttpRateLimitOptions<Req, Res = unknown> extends Partial<Omit<PolicyOptions, 'cost' | 'limit'>> {
  /**
   * The most units admitted in any window: a number, or a function of the request for per-tenant plans (its
   * result is this request's limit, validated per request: a number, or with several policies a map from
   * policy name to limit). With a function and inline options, the policy's name defaults to
   * `plan-per-<window ms>ms`.
   */
  limit?: number | ((req: Req) => MaybePromise<CallLimit>)
  /** Where the windows live (default: a memory store). Not with `limiter`. */
  store?: Store
  /**
   * A limiter built with createRateLimiter, used as it is. Every middleware built on one limiter counts a request
   * once: the first to see it decides (its route, cost and headers), the others let it through.
   */
  limiter?: RateLimiter
  /** A policy object (definePolicy), instead of inline policy options. */
  policy?: Policy | PolicyOptions
  /** Several policies decided together: admitted only if all admit, counted in all only then. */
  policies?: readonly (Policy | PolicyOptions)[]
  /** Who is limited. Default: the client IP as the framework reports it (its trust-proxy setting applies). */
  tenant?: (req: Req) => MaybePromise<string>
  /** Which route a request counts against. Default: the matched route pattern (`GET /users/:id`). */
  route?: (req: Req) => string | undefined
  /** Units a request costs: a number, or a function of the request. Default 1. */
  cost?: number | ((req: Req) => MaybePromise<number>)
  /** Requests to let through uncounted. */
  skip?: (req: Req) => MaybePromise<boolean>
  /** RateLimit header fields to send. Default 'draft-8'. */
  headers?: HeaderStandard | false
  /** Also send X-RateLimit-* headers. Default false. */
  legacyHeaders?: boolean
  /**
   * Called on every denial, before the response is sent; and on every request a shadow policy would have
   * denied (`decision.shadowDenied`: let through), before it continues.
   */
  onLimited?: (req: Req, decision: Decision) => MaybePromise<void>
  /**
   * Give back the units of a request that failed: its status was 400 or more (or `requestWasSuccessful` said
   * false), or the client closed the connection before the response finished. The refund is made after the
   * response, off its path. Default false.
   */
  skipFailedRequests?: boolean
  /** Give back the units of a request that succeeded: its status was below 400 (or `requestWasSuccessful` said true). Default false. */
  skipSuccessfulRequests?: boolean
  /**
   * Whether a finished request succeeded, for `skipFailedRequests` and `skipSuccessfulRequests`, instead of
   * `status < 400`; called once the response has finished (not for a closed connection: that one failed). Its
   * arguments are Express's `(req, res)`, Fastify's `(request, reply)`, and Koa's `(ctx, ctx)`. A function that
   * throws or returns no boolean leaves the request counted, and is logged once.
   */
  requestWasSuccessful?: (req: Req, res: Res) => MaybePromise<boolean>
  /** Status of a denial. Default 429. */
  statusCode?: number
  /** Body of a denial: text, a JSON value, or a function of the request and decision. Default: problem+json. */
  message?: string | object | ((req: Req, decision: Decision) => MaybePromise<string | object>)
  /** Prefix length that groups IPv6 clients into one tenant. Default 56. */
  ipv6Subnet?: number
  /** Where one-time configuration warnings go. Default: console. */
  logger?: Logger
  /** The local tier (deny cache, leases) of the limiter built from these options. */
  local?: LocalOptions | false
  /**
   * Decides what a request gets when it cannot be decided on: a fleetlimit error (a `tenant(req)` that returned
   * no string, a `cost(req)` above the limit, a bad `limit(req)`), or an error your own function threw (tenant,
   * cost, limit, skip, route, onLimited, message). Return `'respond'` (a 500 problem+json), `'allow'` (through,
   * uncounted) or `'throw'` (the framework's error handling: Express `next(error)`, Koa's thrown error, Fastify's
   * error handler); nothing for the default: `'respond'` for fleetlimit's errors (logged once per kind), `'throw'`
   * for your own (so an error with a status, such as Koa's `ctx.throw(401)`, answers with it). Its own error is
   * thrown to the framework.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: an onError that only logs returns nothing, sync or async
  onError?: (error: unknown, req: Req) => MaybePromise<RequestErrorAction | undefined | void>
}

/** What an adapter reads off its framework's request. */
export interface RequestInfo {
  /** The client address as the framework reports it, with its trust-proxy setting applied. */
  readonly ip: string | undefined
  readonly method: string
  /** The matched route pattern, such as `/users/:id`, or undefined when none matched (yet). */
  readonly routePattern: string | undefined
  /**
   * The matched route was declared for several methods (Express `app.all`, @koa/router `router.all`, a Fastify
   * method list; see `manyMethods`): its key is `* <pattern>`, one window for the route whatever the method.
   * Left out or false: the request's method joins the key (`GET /users/:id`).
   */
  readonly manyMethods?: boolean
  /** The request carries an X-Forwarded-For header. */
  readonly forwardedFor: boolean
  /**
   * Whom the framework lets set the client address through X-Forwarded-For: `'none'` (the address is the
   * peer's), `'some'` (listed proxies: addresses, hop counts, a function) or `'all'` (any peer, so every
   * client can write its own address).
   */
  readonly trustProxy: 'none' | 'some' | 'all'
  /** The address of the connection's other end: the proxy's, behind one. */
  readonly peerAddress: string | undefined
}

/**
 * What the adapter does: continue with these headers set, or answer with this response. `decision` is the
 * limiter's, for the handler (`req.rateLimit`): undefined when none was made (a skipped request, one counted
 * already, a store that failed closed).
 */
export type HttpOutcome =
  | {
      readonly action: 'next'
      readonly headers: Readonly<Record<string, string>>
      readonly decision: Decision | undefined
    }
  | {
      readonly action: 'respond'
      readonly status: number
      readonly headers: Readonly<Record<string, string>>
      readonly body: string
      readonly decision: Decision | undefined
    }

export interface HttpLimiter<Req extends object, Res = unknown> {
  readonly limiter: RateLimiter
  /**
   * `skipFailedRequests` or `skipSuccessfulRequests` is set: an admitted request's decision is to be settled
   * once its response ends. Adapters listen for the end only then.
   */
  readonly settles: boolean
  handle(req: Req, info: RequestInfo): Promise<HttpOutcome>
  /**
   * Refunds an admitted decision's units if this request should not count: call it once, when the response has
   * finished (`finished` true, with the status sent) or the connection closed before (`finished` false). Never
   * rejects: a failed refund is counted in `stats().refundErrors`. Resolves to the refund made, or undefined.
   */
  settle(
    req: Req,
    res: Res,
    decision: Decision | undefined,
    finished: boolean,
    status: number,
  ): Promise<RefundResult | undefined>
  stats(): HttpLimiterStats
}

/** What `settle` did, since this HTTP limiter was created. */
export interface HttpLimiterStats {
  /** Requests whose units were given back (skipFailedRequests, skipSuccessfulRequests). */
  readonly refunds: number
  /**
   * Refunds the store failed; the limiter logs the first of an outage, saying whether its units may still count (a
   * refund that got no answer may have been applied).
   */
  readonly refundErrors: number
}

/** What `onResponseEnd` reads of a Node response (`http.ServerResponse`: Express's `res`, Koa's `ctx.res`, Fastify's `reply.raw`). */
export interface NodeResponse {
  readonly writableFinished: boolean
  /** Its connection is gone (the client went away), maybe before the response finished. */
  readonly destroyed?: boolean
  readonly statusCode: number
  once(event: 'finish' | 'close', listener: () => void): unknown
  off(event: 'finish' | 'close', listener: () => void): unknown
}

type Ended = (finished: boolean, status: number) => void

/** What waits for each response's end: one listener pair per response, however many limiters are stacked. */
const waiting = new WeakMap<NodeResponse, Ended[]>()

/**
 * Calls `ended` once, when a Node response has finished (`finished` true) or its connection closed before it did
 * (false), with the status sent: what an adapter hands to `settle`. A response that has ended already (another
 * middleware answered while the limiter decided) is reported at once. `ended` must not throw: it runs in an event
 * listener.
 */
export function onResponseEnd(res: NodeResponse, ended: Ended): void {
  if (res.writableFinished || res.destroyed) {
    ended(res.writableFinished, res.statusCode)
    return
  }
  const others = waiting.get(res)
  if (others) {
    others.push(ended)
    return
  }
  const callbacks = [ended]
  waiting.set(res, callbacks)
  const end = (finished: boolean) => {
    res.off('finish', onFinish)
    res.off('close', onClose)
    waiting.delete(res)
    for (const callback of callbacks) callback(finished, res.statusCode)
  }
  const onFinish = () => end(true)
  // 'close' follows 'finish' too; first, it means the client went away before the response was sent.
  const onClose = () => end(res.writableFinished)
  res.once('finish', onFinish)
  res.once('close', onClose)
}

export interface FrameworkInfo {
  /** The framework's name and how to make it trust a proxy, for the X-Forwarded-For warnings. */
  readonly name: string
  readonly trustProxyHint: string
  /** What to set instead of trusting every proxy. */
  readonly trustAllHint: string
}

const ADAPTER_OPTION_NAMES = optionNames<HttpRateLimitOptions<unknown>>({
  ...POLICY_OPTIONS,
  store: true,
  limiter: true,
  policy: true,
  policies: true,
  tenant: true,
  route: true,
  skip: true,
  headers: true,
  legacyHeaders: true,
  onLimited: true,
  skipFailedRequests: true,
  skipSuccessfulRequests: true,
  requestWasSuccessful: true,
  statusCode: true,
  message: true,
  ipv6Subnet: true,
  logger: true,
  local: true,
  onError: true,
})

/** Policy options an adapter takes as a function of the request; any other one given as a function is an error. */
const REQUEST_FUNCTIONS = new Set<string>(['limit', 'cost'])

/**
 * Checks the option names (a peer's familiar name gets ours) and that no policy option but `limit` and `cost` is
 * a function: what `createHttpLimiter` checks first, for an adapter that builds its limiters later (Fastify's
 * per-route policies).
 */
export function checkHttpOptions<Req, Res>(options: HttpRateLimitOptions<Req, Res>): void {
  checkOptionNames(options, 'rateLimit', ADAPTER_OPTION_NAMES)
  for (const name of POLICY_OPTION_NAMES) {
    const value = options[name]
    if (typeof value !== 'function' || REQUEST_FUNCTIONS.has(name)) continue
    throw new OptionError(
      name,
      value,
      `${POLICY_ACCEPTS[name as keyof typeof POLICY_ACCEPTS]}: of the policy options, only \`limit\` and \`cost\` may be functions of the request`,
    )
  }
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

/** Requests whose route matched no pattern share one bucket, so raw paths never become keys. */
export const UNMATCHED_ROUTE = '*'

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
  checkHttpOptions(options)
  const limiter = resolveLimiter(options)
  const tenantOf = optionalFunction(options.tenant, 'tenant')
  const routeOf = optionalFunction(options.route, 'route')
  const skip = optionalFunction(options.skip, 'skip')
  const onLimited = optionalFunction(options.onLimited, 'onLimited')
  const onError = optionalFunction(options.onError, 'onError')
  const skipFailed = checkBoolean(options.skipFailedRequests ?? false, 'skipFailedRequests')
  const skipSuccessful = checkBoolean(options.skipSuccessfulRequests ?? false, 'skipSuccessfulRequests')
  const wasSuccessful = options.requestWasSuccessful
  if (wasSuccessful !== undefined && typeof wasSuccessful !== 'function') {
    throw new OptionError(
      'requestWasSuccessful',
      wasSuccessful,
      'a function of (req, res) that returns (or resolves to) true for a successful request',
    )
  }
  const costOf = optionalFunction(typeof options.cost === 'function' ? options.cost : undefined, 'cost')
  const limitOf = optionalFunction(typeof options.limit === 'function' ? options.limit : undefined, 'limit')
  // With inline options, limit(req) gives the policy its only limit (its own is the MAX_LIMIT ceiling): a map
  // must name it, or every request it leaves out would be admitted a billion times.
  const unlimited = limitOf && Object.keys(inlinePolicy(options)).length > 0 ? limiter.policy.name : undefined
  const standard: HeaderStandard | false =
    options.headers === false ? false : checkOneOf(options.headers ?? 'draft-8', 'headers', STANDARDS)
  const legacy = checkBoolean(options.legacyHeaders ?? false, 'legacyHeaders')
  const statusCode = checkInteger(options.statusCode ?? 429, 'statusCode', 400, 599)
  const ipv6Subnet = checkInteger(options.ipv6Subnet ?? 56, 'ipv6Subnet', 1, 128)
  const message = options.message
  if (message === null || !['undefined', 'string', 'object', 'function'].includes(typeof message)) {
    throw new OptionError('message', message, 'a string, an object or a function of (req, decision)')
  }
  const logger = options.logger ?? console
  if (typeof logger?.warn !== 'function')
    throw new OptionError('logger', logger, 'an object with a warn(message) method')

  const maxCost = Math.min(...limiter.policies.map((p) => p.limit))
  const headerOptions = {
    standard,
    legacy,
    windows: new Map(limiter.policies.map((p) => [p.name, p.window])),
  }
  const counted = countedBy(limiter)
  const counters = { refunds: 0, refundErrors: 0 }

  /**
   * The message is made only when given: these checks run on every request. A logger that throws is ignored: a
   * warning must fail no request, nor reject `settle`, which runs where nothing awaits it.
   */
  function warnOnce(kind: string, message: () => string): void {
    if (warned.has(kind)) return
    warned.add(kind)
    try {
      logger.warn(`fleetlimit: ${message()}`)
    } catch {
      // Nowhere left to say it.
    }
  }

  /** Trust-proxy set-ups that put clients in the wrong bucket: only the default tenant depends on them. */
  function checkProxy(info: RequestInfo): void {
    const { name, trustProxyHint } = framework
    if (info.trustProxy === 'all') {
      warnOnce(
        'trust-all',
        () =>
          `${name} trusts X-Forwarded-For from any peer, so any client can spoof X-Forwarded-For to pick its own ` +
          `address and escape its limit. ${framework.trustAllHint} (or pass tenant(req)).`,
      )
    } else if (!info.forwardedFor) {
      return
    } else if (info.trustProxy === 'none') {
      warnOnce(
        'untrusted',
        () =>
          `a request carries X-Forwarded-For but ${name} does not trust a proxy, so every client behind the ` +
          `proxy shares one limit. ${trustProxyHint}, or pass tenant(req).`,
      )
    } else if (info.ip !== undefined && info.ip === info.peerAddress) {
      // Set to trust some proxy, yet the client address is the peer's own: this peer is not one it trusts.
      const peer = info.ip
      warnOnce(
        'untrusted-peer',
        () =>
          `a request carries X-Forwarded-For from ${shown(peer)}, which ${name} does not trust as a proxy, so ` +
          `that address is the client. If it is your proxy, every client behind it shares one limit. ` +
          `${trustProxyHint}, or pass tenant(req).`,
      )
    }
  }

  /** The default tenant: the client address, grouped; a value that is not an address is kept, and said once. */
  function ipTenantOf({ ip }: RequestInfo): string {
    if (!ip) return ipTenant(ip)
    const tenant = addressTenant(ip, ipv6Subnet)
    if (tenant !== undefined) return tenant
    warnOnce(
      'not-an-ip',
      () =>
        `the client address ${shown(ip)} that ${framework.name} reports is not an IP address, so it is the ` +
        `tenant as it is, and a client that can vary it escapes its limit. Check what your proxy sends in ` +
        `X-Forwarded-For and which proxies ${framework.name} trusts, or pass tenant(req).`,
    )
    return ip
  }

  // The default denial depends only on the policies denied and the whole seconds to wait: a request denied
  // again in the same second gets the body (and its byte length) made for the first.
  const denials = new Map<string, SizedBody>()
  function defaultDenial(decision: Decision): SizedBody {
    const retryAfter = Math.max(1, Math.ceil(decision.retryAfterMs / 1000))
    const denied = decision.policies?.filter((d) => !d.allowed && !d.shadow).map((d) => d.policy) ?? ''
    const id = `${retryAfter} ${decision.policy} ${denied}`
    let body = denials.get(id)
    if (!body) {
      if (denials.size >= 1_000) denials.clear()
      body = sized(quotaExceededBody(decision, statusCode))
      denials.set(id, body)
    }
    return body
  }

  async function customDenial(req: Req, decision: Decision): Promise<SizedBody> {
    return sized(customBody(typeof message === 'function' ? await message(req, decision) : message))
  }

  /** A response: the headers are the caller's fresh record, completed here. */
  function respond(
    status: number,
    headers: Record<string, string>,
    { contentType, body, length }: SizedBody,
    decision: Decision | undefined,
  ) {
    headers['content-type'] = contentType
    headers['content-length'] = length
    return { action: 'respond', status, headers, body, decision } as const
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
    settles: skipFailed || skipSuccessful,
    async settle(req, res, decision, finished, status) {
      if (!(skipFailed || skipSuccessful) || !decision?.allowed) return undefined
      // A closed connection is a failure, whatever the function would say of a response never sent.
      const succeeded = finished ? await successOf(req, res, status) : false
      if (succeeded === undefined || !(succeeded ? skipSuccessful : skipFailed)) return undefined
      try {
        const result = await limiter.refund(decision)
        if (result.outcome === 'refunded') counters.refunds++
        return result
      } catch {
        // The limiter logged the failure, and whether the units stayed (once an outage); the request is over:
        // nothing to throw to.
        counters.refundErrors++
        return undefined
      }
    },
    stats: () => ({ ...counters }),
  }

  async function decide(req: Req, info: RequestInfo): Promise<HttpOutcome> {
    if (skip && (await skip(req))) return NEXT
    if (!tenantOf) checkProxy(info)
    const tenant = tenantOf ? await tenantOf(req) : ipTenantOf(info)
    if (typeof tenant !== 'string') {
      throw new OptionError(
        'tenant(req)',
        tenant,
        "a string: the tenant of this request (for requests without one, such as a missing API key, return a shared tenant like 'anonymous', or skip them with skip(req))",
      )
    }
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
      const retryAfter = String(Math.max(1, Math.ceil((error as StoreError).retryAfterMs / 1000)))
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

  /** Whether a finished request succeeded; undefined (it stays counted) when requestWasSuccessful fails. */
  async function successOf(req: Req, res: Res, status: number): Promise<boolean | undefined> {
    if (!wasSuccessful) return status < 400
    let result: unknown
    try {
      result = await wasSuccessful(req, res)
    } catch (error) {
      const text = shown(error instanceof Error ? error.message : String(error))
      warnOnce('success-threw', () => `requestWasSuccessful(req, res) threw ${text}: such requests stay counted.`)
      return undefined
    }
    if (typeof result === 'boolean') return result
    warnOnce(
      'success-not-boolean',
      () =>
        `requestWasSuccessful(req, res) returned ${describe(result)}, not true or false: such requests stay counted.`,
    )
    return undefined
  }
}

const STANDARDS = ['draft-6', 'draft-7', 'draft-8'] as const
const ERROR_ACTIONS: readonly RequestErrorAction[] = ['respond', 'allow', 'throw']

/** A request's value in a log line: quoted and escaped (no forged lines), and short. */
const shown = (value: string) => JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value)

type SizedBody = ResponseBody & { readonly length: string }
const sized = (body: ResponseBody): SizedBody => ({ ...body, length: String(Buffer.byteLength(body.body)) })
const STORE_UNAVAILABLE = sized(storeUnavailableBody())

/** The 500 for a request error, by code and option: a handful of kinds, each body made once. */
const requestErrors = new Map<string, SizedBody>()
function requestError(code: string | undefined, option: string | undefined): SizedBody {
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
  const { contentType, body, length } = MISUSE
  return {
    action: 'respond',
    status: 500,
    headers: { 'content-type': contentType, 'content-length': length },
    body,
    decision: undefined,
  }
}
const FACTORY_FIX = "rateLimit is a factory: call it with options, app.use(rateLimit({ limit: 100, window: '1m' }))"
const MISUSE = sized(requestErrorBody(FACTORY_FIX, 'ERR_FLEETLIMIT_OPTION'))

/** HEAD counts as the GET it is served by. */
const servedAs = (method: string) => {
  const upper = method.toUpperCase()
  return upper === 'HEAD' ? 'GET' : upper
}

/**
 * Whether a route declared for these methods (any letter case) takes more than one, HEAD counting as GET: what
 * an adapter reports as `RequestInfo.manyMethods`.
 */
export function manyMethods(methods: Iterable<string>): boolean {
  let first: string | undefined
  for (const method of methods) {
    const served = servedAs(method)
    if (first === undefined) first = served
    else if (served !== first) return true
  }
  return false
}

/**
 * `GET /users/:id` for a matched pattern, `* /api/op` for a route of several methods (one key per route
 * definition), else the shared bucket.
 */
function defaultRoute(info: RequestInfo): string {
  if (info.routePattern === undefined) return UNMATCHED_ROUTE
  return `${info.manyMethods ? '*' : servedAs(info.method)} ${info.routePattern}`
}

/**
 * The inline policy options among an adapter's options: a `cost` or `limit` function is the adapter's, not the
 * policy's (checkHttpOptions rejects any other function).
 */
function inlinePolicy<Req, Res>(options: HttpRateLimitOptions<Req, Res>): Partial<PolicyOptions> {
  const entries = POLICY_OPTION_NAMES.flatMap((name) => {
    const value = options[name]
    return value === undefined || (typeof value === 'function' && REQUEST_FUNCTIONS.has(name))
      ? []
      : [[name, value] as const]
  })
  return Object.fromEntries(entries)
}

/** Whether limit(req)'s result is a map, one with an own entry for the policy `name` when one is given. */
function namesLimit(limit: unknown, name: string | undefined): boolean {
  if (typeof limit !== 'object' || limit === null) return false
  return name === undefined || (Object.hasOwn(limit, name) && (limit as Record<string, unknown>)[name] !== undefined)
}

/** Whether the options name a limit at all (Fastify's plugin may be registered for per-route policies only). */
export function hasLimitSource<Req, Res>(options: HttpRateLimitOptions<Req, Res>): boolean {
  const { limiter, policy, policies } = options
  return (
    limiter !== undefined ||
    policy !== undefined ||
    policies !== undefined ||
    Object.keys(inlinePolicy(options)).length > 0
  )
}

/** The options without what sets the limit: what a route's own policy shares with the plugin's options. */
export function withoutLimitSource<Req, Res>(options: HttpRateLimitOptions<Req, Res>): HttpRateLimitOptions<Req, Res> {
  // A function-valued `limit` (per-tenant plans) is the plugin policy's: a route's own policy keeps its limit.
  const limitNames = new Set<string>(['limiter', 'policy', 'policies', 'limit', ...Object.keys(inlinePolicy(options))])
  return Object.fromEntries(Object.entries(options).filter(([name]) => !limitNames.has(name)))
}

function resolveLimiter<Req, Res>(options: HttpRateLimitOptions<Req, Res>): RateLimiter {
  const inline = inlinePolicy(options)
  if (typeof options.limit === 'function' && Object.keys(inline).length > 0) {
    // Each request names its limit: the policy's is only the ceiling, and its name does not carry a number.
    inline.limit = MAX_LIMIT
    if (inline.window !== undefined) inline.name ??= `plan-per-${parseDuration(inline.window, 'window')}ms`
  }
  const sources = [
    options.limiter !== undefined && 'limiter',
    options.policy !== undefined && 'policy',
    options.policies !== undefined && 'policies',
    Object.keys(inline).length > 0 && Object.keys(inline).join(', '),
  ].filter((source): source is string => source !== false)
  if (sources.length !== 1) {
    throw new OptionError(
      sources.length === 0 ? 'limit' : sources.join(' + '),
      undefined,
      'exactly one of: inline policy options (limit, window, …), `policy`, `policies` or `limiter`',
    )
  }
  if (options.limiter !== undefined) {
    const limiter = options.limiter as Partial<RateLimiter>
    if (typeof limiter.consume !== 'function' || !Array.isArray(limiter.policies)) {
      throw new OptionError('limiter', options.limiter, 'a limiter made by createRateLimiter')
    }
    if (options.store !== undefined) throw new OptionError('store', options.store, 'no store beside `limiter`')
    return options.limiter
  }
  const base = {
    ...(options.store !== undefined && { store: options.store }),
    ...(options.logger !== undefined && { logger: options.logger }),
    ...(options.local !== undefined && { local: options.local }),
  }
  if (options.policies !== undefined) return createRateLimiter({ ...base, policies: options.policies })
  const { policy } = options
  if (policy === undefined) return createRateLimiter({ ...base, ...inline })
  if (typeof policy !== 'object' || policy === null) throw new OptionError('policy', policy, 'a policy object')
  // As one of `policies`, not spread: a policy object is used as it is (its durations as they were written).
  return createRateLimiter({ ...base, policies: [policy] })
}
