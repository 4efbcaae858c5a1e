import { parseDuration } from '../common/duration.js'
import { OptionError } from '../common/errors.js'
import {
  checkBoolean,
  checkInteger,
  checkOneOf,
  checkOptionNames,
  optionalFunction,
  optionNames,
} from '../common/validate.js'
import type { Decision } from '../limiter/decision.js'
import { type CallLimit, createRateLimiter, type Logger, type RateLimiter } from '../limiter/limiter.js'
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
import type { HeaderOptions, HeaderStandard } from './headers.js'

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

const STANDARDS = ['draft-6', 'draft-7', 'draft-8'] as const

type Options<Req, Res> = HttpRateLimitOptions<Req, Res>

/** An adapter's options, checked once: what `createHttpLimiter` decides with. */
export interface ResolvedHttpOptions<Req, Res> {
  readonly limiter: RateLimiter
  readonly tenantOf: Options<Req, Res>['tenant']
  readonly routeOf: Options<Req, Res>['route']
  readonly skip: Options<Req, Res>['skip']
  readonly onLimited: Options<Req, Res>['onLimited']
  readonly onError: Options<Req, Res>['onError']
  readonly skipFailed: boolean
  readonly skipSuccessful: boolean
  readonly wasSuccessful: Options<Req, Res>['requestWasSuccessful']
  readonly costOf: Exclude<Options<Req, Res>['cost'], number>
  readonly limitOf: Exclude<Options<Req, Res>['limit'], number>
  /** The inline policy's name when limit(req) gives it its only limit: a map from limit(req) must name it. */
  readonly unlimited: string | undefined
  readonly statusCode: number
  readonly ipv6Subnet: number
  readonly message: Options<Req, Res>['message']
  readonly logger: Logger
  /** The most a request may cost under the policies' own limits. */
  readonly maxCost: number
  readonly headerOptions: HeaderOptions
}

/** Checks an adapter's options once, each in turn (the first bad one is the one named), and builds or takes its limiter. */
export function resolveHttpOptions<Req, Res>(options: Options<Req, Res>): ResolvedHttpOptions<Req, Res> {
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

  return Object.freeze({
    limiter,
    tenantOf,
    routeOf,
    skip,
    onLimited,
    onError,
    skipFailed,
    skipSuccessful,
    wasSuccessful,
    costOf,
    limitOf,
    unlimited,
    statusCode,
    ipv6Subnet,
    message,
    logger,
    maxCost: Math.min(...limiter.policies.map((p) => p.limit)),
    headerOptions: { standard, legacy, windows: new Map(limiter.policies.map((p) => [p.name, p.window])) },
  })
}

/**
 * The inline policy options among an adapter's options: a `cost` or `limit` function is the adapter's, not the
 * policy's (checkHttpOptions rejects any other function).
 */
export function inlinePolicy<Req, Res>(options: HttpRateLimitOptions<Req, Res>): Partial<PolicyOptions> {
  const entries = POLICY_OPTION_NAMES.flatMap((name) => {
    const value = options[name]
    return value === undefined || (typeof value === 'function' && REQUEST_FUNCTIONS.has(name))
      ? []
      : [[name, value] as const]
  })
  return Object.fromEntries(entries)
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
