// An adapter's options checked once, each in turn, into the frozen record that createHttpLimiter decides with; and
// the limiter it decides with (the one given, or one built from the options).
import { parseDuration } from '../common/duration.js'
import { OptionError } from '../common/errors.js'
import type { Logger } from '../common/logger.js'
import { checkBoolean, checkInteger, checkOneOf, optionalFunction } from '../common/validate.js'
import { createRateLimiter } from '../limiter/limiter.js'
import type { RateLimiter } from '../limiter/limiter-types.js'
import { definePolicy, MAX_LIMIT, POLICY_OPTION_NAMES, type Policy, type PolicyOptions } from '../limiter/policy.js'
import { checkHttpOptions, REQUEST_FUNCTIONS } from './check-http-options.js'
import type { HeaderOptions, HeaderStandard } from './headers.js'
import type { HttpRateLimitOptions } from './http-options.js'
import { inFlightPolicy } from './in-flight.js'

/**
 * The options that make the adapter's own in-flight policy rather than the inline policy: `concurrency` is a
 * policy of its own beside the rate policy, and `slotTtlMs` its slots' life.
 */
const IN_FLIGHT_OPTIONS = new Set<string>(['concurrency', 'slotTtlMs'])

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
