// Which limiter an adapter decides with: the one it was given, or one built from its inline options, `policy` or
// `policies`, with the `concurrency` option's in-flight policy beside them.
import { parseDuration } from '../common/duration.js'
import { OptionError } from '../common/errors.js'
import { createRateLimiter } from '../limiter/limiter.js'
import type { RateLimiter } from '../limiter/limiter-types.js'
import { definePolicy, MAX_LIMIT, POLICY_OPTION_NAMES, type Policy, type PolicyOptions } from '../limiter/policy.js'
import { REQUEST_FUNCTIONS } from './check-http-options.js'
import type { HttpRateLimitOptions } from './http-options.js'
import { inFlightPolicy } from './in-flight.js'

/**
 * The options that make the adapter's own in-flight policy rather than the inline policy: `concurrency` is a
 * policy of its own beside the rate policy, and `slotTtlMs` its slots' life.
 */
const IN_FLIGHT_OPTIONS = new Set<string>(['concurrency', 'slotTtlMs'])

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
export interface LimiterSetup {
  readonly limiter: RateLimiter
  /** See ResolvedHttpOptions. */
  readonly unlimited: string | undefined
  readonly ownInFlight: string | undefined
  readonly rateName: string | undefined
}

export function resolveLimiter<Req, Res>(options: HttpRateLimitOptions<Req, Res>): LimiterSetup {
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
