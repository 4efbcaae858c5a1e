import { parseDuration } from '../common/duration.js'
import { OptionError } from '../common/errors.js'
import type { Logger } from '../common/logger.js'
import {
  checkBoolean,
  checkInteger,
  checkOneOf,
  checkOptionNames,
  optionalFunction,
  optionNames,
} from '../common/validate.js'
import type { Decision } from '../limiter/decision.js'
import { createRateLimiter } from '../limiter/limiter.js'
import type { CallLimit, RateLimiter } from '../limiter/limiter-types.js'
import type { LocalOptions } from '../limiter/local-tier.js'
import {
  definePolicy,
  MAX_LIMIT,
  POLICY_ACCEPTS,
  POLICY_OPTION_NAMES,
  POLICY_OPTIONS,
  type Policy,
  type PolicyOptions,
} from '../limiter/policy.js'
import type { Store } from '../store/store.js'
import type { HeaderOptions, HeaderStandard } from './headers.js'
import { inFlightPolicy } from './in-flight.js'

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
export interface HttpRateLimitOptions<Req, Res = unknown>
  extends Partial<Omit<PolicyOptions, 'cost' | 'limit' | 'concurrency'>> {
  /**
   * The most units admitted in any window: a number, or a function of the request for per-tenant plans (its
   * result is this request's limit, validated per request: a number, or with several policies a map from
   * policy name to limit). With a function and inline options, the policy's name defaults to
   * `plan-per-<window ms>ms`.
   */
  limit?: number | ((req: Req) => MaybePromise<CallLimit>)
  /**
   * At most this many requests in flight per key (tenant and route), fleet-wide: a whole number, or a function of
   * the request for per-tenant limits (its result is this request's, validated per request). It adds an in-flight
   * policy to the request's policies, decided in the same store call: alone (`rateLimit({ concurrency: 3 })`),
   * beside inline policy options, `policy` or `policies`, not `limiter` (give its limiter an in-flight policy,
   * `definePolicy({ concurrency })`, which is honoured the same way). Its name is `<n>-in-flight` (`in-flight`
   * for a function; an in-flight limit alone takes the inline `name`); it fails open, counts per tenant, or only
   * measures when every other policy does, and its deadline is theirs. An admitted request's slot is released
   * once, when its response finishes, or its client goes away first (a handler that throws ends in the
   * framework's error response); a slot never released (a process that died) comes back after `slotTtlMs`
   * (default 1 minute: set it above your longest request, or keep a long one's slot with
   * `req.rateLimit.extend()`). A full route answers `concurrencyStatusCode`, with a Retry-After of 1 s (a slot may
   * come back at any moment), or a rate policy's longer wait when it denies too.
   */
  concurrency?: number | ((req: Req) => MaybePromise<number>)
  /**
   * Status of a denial by in-flight policies alone (`concurrency`, or in-flight policies in `policies`): 503 to
   * say the server is busy rather than that the client sent too much. A denial by a rate policy answers
   * `statusCode`. Default: `statusCode` (429).
   */
  concurrencyStatusCode?: number
  /** Where the windows live (default: a memory store). Not with `limiter`. */
  store?: Store
  /**
   * A limiter built with createRateLimiter, used as it is. Every middleware built on one limiter counts a request
   * once: the first to see it decides (its route, cost and headers), the others let it through. Middlewares on one
   * store count a request once per store key: a later one whose keys were all counted takes that decision.
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
  /** Status of a denial (one by in-flight policies alone: `concurrencyStatusCode`). Default 429. */
  statusCode?: number
  /**
   * Body of a denial: text, a JSON value, or a function of the request and decision (its wait as Retry-After
   * tells it: see `concurrency`). Default: problem+json.
   */
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
  concurrencyStatusCode: true,
  message: true,
  ipv6Subnet: true,
  logger: true,
  local: true,
  onError: true,
})

/** Policy options an adapter takes as a function of the request; any other one given as a function is an error. */
const REQUEST_FUNCTIONS = new Set<string>(['limit', 'cost', 'concurrency'])

/**
 * The options that make the adapter's own in-flight policy rather than the inline policy: `concurrency` is a
 * policy of its own beside the rate policy, and `slotTtlMs` its slots' life.
 */
const IN_FLIGHT_OPTIONS = new Set<string>(['concurrency', 'slotTtlMs'])

/**
 * Checks the option names (a peer's familiar name gets ours) and that no policy option but `limit`, `cost` and
 * `concurrency` is a function: what `createHttpLimiter` checks first, for an adapter that builds its limiters
 * later (Fastify's per-route policies).
 */
export function checkHttpOptions<Req, Res>(options: HttpRateLimitOptions<Req, Res>): void {
  checkOptionNames(options, 'rateLimit', ADAPTER_OPTION_NAMES)
  for (const name of POLICY_OPTION_NAMES) {
    const value = options[name]
    if (typeof value !== 'function' || REQUEST_FUNCTIONS.has(name)) continue
    throw new OptionError(
      name,
      value,
      `${POLICY_ACCEPTS[name as keyof typeof POLICY_ACCEPTS]}: of the policy options, only \`limit\`, \`cost\` and \`concurrency\` may be functions of the request`,
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
  readonly concurrencyOf: Exclude<Options<Req, Res>['concurrency'], number>
  /** The name of the in-flight policy the `concurrency` option added, if any. */
  readonly ownInFlight: string | undefined
  /** With `ownInFlight`: the one policy beside it, which a bare number from limit(req) limits. */
  readonly rateName: string | undefined
  /** The limiter's in-flight policies, by name: their admissions hold slots until the response ends. */
  readonly inFlight: ReadonlySet<string>
  readonly statusCode: number
  readonly concurrencyStatusCode: number
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
  const { limiter, ownInFlight, rateName, unlimited } = resolveLimiter(options)
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
  const concurrencyOf = typeof options.concurrency === 'function' ? options.concurrency : undefined
  const standard: HeaderStandard | false =
    options.headers === false ? false : checkOneOf(options.headers ?? 'draft-8', 'headers', STANDARDS)
  const legacy = checkBoolean(options.legacyHeaders ?? false, 'legacyHeaders')
  const statusCode = checkInteger(options.statusCode ?? 429, 'statusCode', 400, 599)
  const concurrencyStatusCode = checkInteger(
    options.concurrencyStatusCode ?? statusCode,
    'concurrencyStatusCode',
    400,
    599,
  )
  const ipv6Subnet = checkInteger(options.ipv6Subnet ?? 56, 'ipv6Subnet', 1, 128)
  const message = options.message
  if (message === null || !['undefined', 'string', 'object', 'function'].includes(typeof message)) {
    throw new OptionError('message', message, 'a string, an object or a function of (req, decision)')
  }
  const logger = options.logger ?? console
  if (typeof logger?.warn !== 'function')
    throw new OptionError('logger', logger, 'an object with a warn(message) method')
  const slotPolicies = limiter.policies.filter((p) => p.concurrency !== undefined)
  const rates = limiter.policies.filter((p) => p.concurrency === undefined)

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
    concurrencyOf,
    ownInFlight,
    rateName,
    inFlight: new Set(slotPolicies.map((p) => p.name)),
    statusCode,
    concurrencyStatusCode,
    ipv6Subnet,
    message,
    logger,
    // A request takes one slot of an in-flight policy whatever its cost.
    maxCost: rates.length === 0 ? MAX_LIMIT : Math.min(...rates.map((p) => p.limit)),
    headerOptions: { standard, legacy, windows: new Map(limiter.policies.map((p) => [p.name, p.window])) },
  })
}

/**
 * The inline policy options among an adapter's options: a `cost` or `limit` function is the adapter's, not the
 * policy's (checkHttpOptions rejects any other function), and `concurrency` with `slotTtlMs` make a policy of
 * their own.
 */
export function inlinePolicy<Req, Res>(options: HttpRateLimitOptions<Req, Res>): Partial<PolicyOptions> {
  const entries = POLICY_OPTION_NAMES.flatMap((name) => {
    const value = options[name]
    return value === undefined ||
      IN_FLIGHT_OPTIONS.has(name) ||
      (typeof value === 'function' && REQUEST_FUNCTIONS.has(name))
      ? []
      : [[name, value] as const]
  })
  return Object.fromEntries(entries)
}

/** The limiter an adapter decides with, and how a request's own limits map onto its policies. */
interface LimiterSetup {
  readonly limiter: RateLimiter
  /** See ResolvedHttpOptions. */
  readonly unlimited: string | undefined
  readonly ownInFlight: string | undefined
  readonly rateName: string | undefined
}

function resolveLimiter<Req, Res>(options: HttpRateLimitOptions<Req, Res>): LimiterSetup {
  const { concurrency, slotTtlMs } = options
  if (slotTtlMs !== undefined && concurrency === undefined) {
    throw new OptionError('slotTtlMs', slotTtlMs, 'no slotTtlMs without `concurrency`: it is the life of its slots')
  }
  const inline = inlinePolicy(options)
  const perRequestLimit = typeof options.limit === 'function'
  if (perRequestLimit && Object.keys(inline).length > 0) {
    // Each request names its limit: the policy's is only the ceiling, and its name does not carry a number.
    inline.limit = MAX_LIMIT
    if (inline.window !== undefined) inline.name ??= `plan-per-${parseDuration(inline.window, 'window')}ms`
  }
  // Beside `concurrency`, inline options without a limit or window are those of the in-flight limit alone.
  const inlineRate =
    Object.keys(inline).length > 0 &&
    (concurrency === undefined || inline.limit !== undefined || inline.window !== undefined)
  const sources = [
    options.limiter !== undefined && 'limiter',
    options.policy !== undefined && 'policy',
    options.policies !== undefined && 'policies',
    inlineRate && Object.keys(inline).join(', '),
  ].filter((source): source is string => source !== false)
  // An in-flight limit alone needs no other source, unless limit(req) is there to set a rate policy's limit.
  const alone = concurrency !== undefined && sources.length === 0 && !perRequestLimit
  if (sources.length !== 1 && !alone) {
    throw new OptionError(
      sources.length === 0 ? 'limit' : sources.join(' + '),
      undefined,
      'exactly one of: inline policy options (limit, window, …), `policy`, `policies` or `limiter`',
    )
  }
  // With inline options, limit(req) gives the policy its only limit (its own is the MAX_LIMIT ceiling): a map
  // must name it, or every request it leaves out would be admitted a billion times.
  const inlineUnlimited = perRequestLimit && inlineRate
  if (options.limiter !== undefined) {
    const limiter = options.limiter as Partial<RateLimiter>
    if (typeof limiter.consume !== 'function' || !Array.isArray(limiter.policies)) {
      throw new OptionError('limiter', options.limiter, 'a limiter made by createRateLimiter')
    }
    if (options.store !== undefined) throw new OptionError('store', options.store, 'no store beside `limiter`')
    if (concurrency !== undefined) {
      throw new OptionError(
        'concurrency',
        concurrency,
        'no concurrency beside `limiter`: give the limiter an in-flight policy, definePolicy({ concurrency })',
      )
    }
    return { limiter: options.limiter, unlimited: undefined, ownInFlight: undefined, rateName: undefined }
  }
  const base = {
    ...(options.store !== undefined && { store: options.store }),
    ...(options.logger !== undefined && { logger: options.logger }),
    ...(options.local !== undefined && { local: options.local }),
  }
  const { policy } = options
  if (policy !== undefined && (typeof policy !== 'object' || policy === null)) {
    throw new OptionError('policy', policy, 'a policy object')
  }
  if (concurrency === undefined) {
    const limiter =
      options.policies !== undefined
        ? createRateLimiter({ ...base, policies: options.policies })
        : policy === undefined
          ? createRateLimiter({ ...base, ...inline })
          : // As one of `policies`, not spread: a policy object is used as it is (its durations as they were written).
            createRateLimiter({ ...base, policies: [policy] })
    const unlimited = inlineUnlimited ? limiter.policy.name : undefined
    return { limiter, unlimited, ownInFlight: undefined, rateName: undefined }
  }
  const listed = options.policies ?? (policy !== undefined ? [policy] : inlineRate ? [inline] : [])
  if (!Array.isArray(listed)) {
    throw new OptionError('policies', listed, 'an array of 1 to 8 policies (definePolicy objects)')
  }
  const given = listed.map((p) => definePolicy(p))
  const rates = given.filter((p) => p.concurrency === undefined)
  const own = inFlightPolicy(concurrency, slotTtlMs, rates, alone ? inline : undefined)
  // After the others: the limiter's first policy (its `policy`, the keys' and headers' first) stays the rate's.
  const limiter = createRateLimiter({ ...base, policies: [...given, own] })
  return {
    limiter,
    unlimited: inlineUnlimited ? (given[0] as Policy).name : undefined,
    ownInFlight: own.name,
    rateName: given.length === 1 ? (given[0] as Policy).name : undefined,
  }
}
