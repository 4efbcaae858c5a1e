import { checkTimeZone, PERIOD_MS, PERIOD_UNITS, type PeriodUnit } from '../common/calendar.js'
import { type Duration, parseDuration } from '../common/duration.js'
import { OptionError } from '../common/errors.js'
import {
  checkBoolean,
  checkInteger,
  checkOneOf,
  checkOptionNames,
  type OptionNames,
  optionNames,
} from '../common/validate.js'
import { checkPolicyPriorities, type PriorityClass } from './priority-classes.js'

export type StoreErrorMode = 'fail-closed' | 'fail-open'

/** How a window is kept: a log of every admitted unit (exact), or sub-window counters (bounded memory). */
export type Algorithm = 'sliding-log' | 'bucketed'

/** What one window counts: each tenant's calls per route ('route'), or all of a tenant's calls ('tenant'). */
export type PolicyScope = 'route' | 'tenant'

export interface FallbackOptions {
  /** Admissions per window for this process alone while the store is failing: size it as quota / maximum replicas. */
  limit: number
}

export interface PolicyOptions {
  /** The most units admitted in any window: a positive whole number. Required, unless `concurrency` is given. */
  limit?: number
  /** The window length: ms, or '250ms' | '10s' | '1m' | '1h' | '1d'. Required, unless `concurrency` or `period` is given. */
  window?: Duration
  /**
   * A calendar quota instead of a sliding window: a count that starts over at each local midnight ('day'), Monday
   * ('week') or 1st ('month') in `timeZone`, or on the day a call's `anchor` names (a tenant's billing day).
   */
  period?: PeriodUnit
  /** For `period`: the IANA time zone its days start in. Default 'UTC'. */
  timeZone?: string
  /**
   * An in-flight policy instead of a rate: at most this many calls in flight per key, fleet-wide. An admission
   * takes a slot, which `limiter.release(decision)` (or the adapter, at the end of the request) gives back.
   */
  concurrency?: number
  /**
   * For `concurrency`: how long a slot is held unless released or extended (`decision.extend(ms)`), so that the
   * slots of a process that died or hung come back. Default 60000 (1 minute).
   */
  slotTtlMs?: Duration
  /** Part of every key and of the RateLimit-Policy header. Default: `<limit>-per-<window ms>ms`. */
  name?: string
  /** Units one call consumes unless the call says otherwise. Default 1. */
  cost?: number
  /** Count per tenant and route ('route', the default), or per tenant across routes ('tenant'). */
  scope?: PolicyScope
  /** 'sliding-log' (the default: exact, about 9 B per call in the window) or 'bucketed' (memory bounded by `buckets`). */
  algorithm?: Algorithm
  /** For 'bucketed': sub-window counters per window. Default 60. */
  buckets?: number
  /** What a decision does when the store fails or misses `timeoutMs`. Default 'fail-closed'. */
  onStoreError?: StoreErrorMode
  /** While failing open, admit under this strict per-process limit (`source: 'fallback'`). */
  fallback?: FallbackOptions
  /** Deadline for one store decision. Default 100 ms. */
  timeoutMs?: Duration
  /**
   * Once a key is denied for lack of room, deny it for this long, fleet-wide, whatever the window says (the
   * wait reported is the time left). Default 0: no block.
   */
  blockFor?: Duration
  /**
   * Measure without enforcing: decisions are made, recorded and reported as usual (headers, `onLimited`, the
   * `decision` event, metrics as `shadow_denied`), but a call this policy would deny is let through
   * (`allowed: true`, `shadowDenied: true`). Default false.
   */
  shadow?: boolean
  /**
   * Priority classes, highest first, each with its share of the limit: `[{ name: 'interactive', share: 0.7 }, {
   * name: 'batch', share: 0.3 }]`; a call names its class (`priority`; none: the last). An unused share is lent; while
   * an `acquire()` of a class waits, in any process, no lower class is admitted beyond its share. Sliding-log rates only.
   */
  priorities?: readonly PriorityClass[]
}

/** A validated, frozen policy. Its fields are valid options, so `{ store, ...policy }` builds a limiter. */
export interface Policy {
  readonly name: string
  /** The most units in a window; for an in-flight policy, its `concurrency`. */
  readonly limit: number
  /** The window in ms; for an in-flight policy, its `slotTtlMs`; for a calendar policy, its longest period. */
  readonly window: number
  /** Set for a calendar policy: the period its count starts over at. */
  readonly period?: PeriodUnit
  /** Set for a calendar policy: the zone its periods start in. */
  readonly timeZone?: string
  /** Set for an in-flight policy: the most calls in flight per key. */
  readonly concurrency?: number
  /** Set for an in-flight policy: a slot's life in ms unless released or extended. */
  readonly slotTtlMs?: number
  readonly cost: number
  readonly scope: PolicyScope
  readonly algorithm: Algorithm
  /** For 'bucketed' only. */
  readonly buckets?: number
  readonly onStoreError: StoreErrorMode
  readonly fallback?: Readonly<FallbackOptions>
  readonly timeoutMs: number
  /** ms; 0 for none. */
  readonly blockFor: number
  readonly shadow: boolean
  /** Its priority classes, highest first; unset for none. */
  readonly priorities?: readonly PriorityClass[]
}

/** Every policy option, by name: a new option without its runtime name here fails to compile. */
export const POLICY_OPTIONS: OptionNames<PolicyOptions> = {
  name: true,
  limit: true,
  window: true,
  period: true,
  timeZone: true,
  concurrency: true,
  slotTtlMs: true,
  cost: true,
  scope: true,
  algorithm: true,
  buckets: true,
  onStoreError: true,
  fallback: true,
  timeoutMs: true,
  blockFor: true,
  shadow: true,
  priorities: true,
}
export const POLICY_OPTION_NAMES = optionNames(POLICY_OPTIONS)

/**
 * What each policy option accepts, for an adapter given a function where a value belongs (only `limit` and
 * `cost` may be functions of the request there): a new option without its text here fails to compile.
 */
export const POLICY_ACCEPTS: { readonly [K in Exclude<keyof PolicyOptions, 'limit' | 'cost'>]-?: string } = {
  name: '1 to 64 letters, digits, `.`, `_` or `-`, starting with a letter or digit',
  window: "a duration such as 60000 or '1m'",
  period: '"day", "week" or "month"',
  timeZone: "an IANA time zone name such as 'UTC' or 'Europe/Berlin'",
  concurrency: 'a whole number from 1 to 1000000',
  slotTtlMs: "a duration such as 60000 or '1m'",
  scope: '"route" or "tenant"',
  algorithm: '"sliding-log" or "bucketed"',
  buckets: 'a whole number from 1 to 3600',
  onStoreError: '"fail-closed" or "fail-open"',
  fallback: 'an object { limit }',
  timeoutMs: "a duration such as 100 or '250ms'",
  blockFor: "a duration such as 60000 or '10m'",
  shadow: 'true or false',
  priorities: 'an array of classes { name, share }, highest first',
}

/** A window or block written as a bare number under a second: milliseconds, where seconds were most likely meant. */
export interface BareDuration {
  readonly option: 'window' | 'blockFor'
  readonly ms: number
}

/** Policies made here: given again (`policies: [policy]`, `definePolicy(policy)`), one is used as it is. */
const resolved = new WeakSet<Policy>()
const bare = new WeakMap<Policy, readonly BareDuration[]>()
/**
 * Sub-second durations written with their unit ('500ms'), as `<name> <option> <ms>`: a spread of such a policy
 * (`{ store, ...policy }`) carries a bare number that was meant as milliseconds. Bounded: only a warning rests on it.
 */
const writtenInMs = new Set<string>()

/** The durations of a policy that were written as bare numbers under a second, for the limiter to warn about. */
export function bareDurations(policy: Policy): readonly BareDuration[] {
  return bare.get(policy) ?? []
}

function bareDuration(option: BareDuration['option'], written: unknown, ms: number, name: string) {
  if (ms === 0 || ms >= 1_000) return undefined
  const id = `${name} ${option} ${ms}`
  if (typeof written === 'string') {
    if (writtenInMs.size >= 1_000) writtenInMs.clear()
    writtenInMs.add(id)
    return undefined
  }
  return writtenInMs.has(id) ? undefined : { option, ms }
}

/** The longest block or pause: about 24.8 days, the longest a Node timer waits. */
export const MAX_HOLD_MS = 2_147_483_647

/** The largest limit a policy (or a call) may name. */
export const MAX_LIMIT = 1_000_000_000
/** The most calls in flight a policy may allow per key. */
export const MAX_CONCURRENCY = 1_000_000
const NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/

/** A call's cost: a whole number from 1 to the limit. A call's work does not grow with it, in any store. */
export function checkCost(value: unknown, option: string, limit: number): number {
  return checkInteger(value, option, 1, limit)
}

/**
 * The policy's part of its keys: its name and how its window is kept (algorithm, format version, length, and
 * buckets), so that two policies that keep windows differently never share a key, whatever their names, and
 * two versions of fleetlimit that keep a window in different formats never share one (`sl1` was a sorted set,
 * `sl2` a packed log of 10-byte entries, `sl3` is lua/sliding-log.lua's log of 9-byte entries, `if1` its sorted set
 * of in-flight slots, `pd1` its calendar period's count, with the unit and zone). `~` is not allowed in names, so
 * the parts cannot run together.
 */
export function policyKeyName(policy: Policy): string {
  if (policy.concurrency !== undefined) return `${policy.name}~if1-${policy.window}`
  if (policy.period !== undefined) return `${policy.name}~pd1-${policy.period}-${policy.timeZone}`
  return policy.algorithm === 'bucketed'
    ? `${policy.name}~bw1-${policy.window}-${policy.buckets}`
    : `${policy.name}~sl3-${policy.window}`
}

/**
 * The policy fields a key name (policyKeyName's output) holds, `inFlight` for an in-flight policy's (whose window
 * is its slot life); undefined for any other text.
 */
export function parsePolicyKeyName(
  keyName: string,
):
  | { name: string; window: number; algorithm: Algorithm; buckets?: number; inFlight?: true; period?: never }
  | { name: string; window: number; algorithm: 'sliding-log'; period: PeriodUnit; timeZone: string }
  | undefined {
  const period = /^([A-Za-z0-9][A-Za-z0-9._-]{0,63})~pd1-(day|week|month)-([A-Za-z][A-Za-z0-9_+/-]*)$/.exec(keyName)
  if (period) {
    const [, name, unit, timeZone] = period as unknown as [string, string, PeriodUnit, string]
    return { name, window: PERIOD_MS[unit], algorithm: 'sliding-log', period: unit, timeZone }
  }
  const match = /^([A-Za-z0-9][A-Za-z0-9._-]{0,63})~(?:sl3-(\d+)|bw1-(\d+)-(\d+)|if1-(\d+))$/.exec(keyName)
  if (!match) return undefined
  const [, name, logWindow, bucketedWindow, buckets, slotTtl] = match as unknown as [
    string,
    string,
    string?,
    string?,
    string?,
    string?,
  ]
  if (slotTtl !== undefined) return { name, window: Number(slotTtl), algorithm: 'sliding-log', inFlight: true }
  return logWindow !== undefined
    ? { name, window: Number(logWindow), algorithm: 'sliding-log' }
    : { name, window: Number(bucketedWindow), algorithm: 'bucketed', buckets: Number(buckets) }
}

/**
 * Validates policy options once, into a frozen policy that can be shared by several limiters and routes.
 *
 * @example
 * ```ts
 * const search = definePolicy({ name: 'search', limit: 10, window: '10s' })
 * const limiter = createRateLimiter({ store, ...search })
 * ```
 */
export function definePolicy(options: PolicyOptions): Policy {
  checkOptionNames(options, 'policy', POLICY_OPTION_NAMES)
  return resolvePolicy(options)
}

/** Validates the policy fields of an options object whose names were already checked. */
export function resolvePolicy(options: PolicyOptions): Policy {
  if (resolved.has(options as Policy)) return options as Policy
  if (options.concurrency !== undefined) return resolveInFlightPolicy(options)
  if (options.slotTtlMs !== undefined)
    throw new OptionError('slotTtlMs', options.slotTtlMs, 'no slotTtlMs without `concurrency`')
  if (options.limit === undefined) throw new OptionError('limit', undefined, 'a whole number from 1 to 1000000000')
  const calendar = resolveCalendar(options)
  if (options.window === undefined && !calendar)
    throw new OptionError('window', undefined, "a duration such as 60000 or '1m' (or a `period` for a calendar quota)")
  const limit = checkInteger(options.limit, 'limit', 1, MAX_LIMIT)
  const window = calendar ? PERIOD_MS[calendar.period] : parseDuration(options.window, 'window')

  const name = options.name ?? (calendar ? `${limit}-per-${calendar.period}` : `${limit}-per-${window}ms`)
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new OptionError('name', name, '1 to 64 letters, digits, `.`, `_` or `-`, starting with a letter or digit')
  }

  const scope = checkOneOf(options.scope ?? 'route', 'scope', ['route', 'tenant'])
  const algorithm = checkOneOf(options.algorithm ?? 'sliding-log', 'algorithm', ['sliding-log', 'bucketed'])
  const cost = options.cost === undefined ? 1 : checkCost(options.cost, 'cost', limit)
  let buckets: number | undefined
  if (algorithm === 'bucketed') buckets = checkInteger(options.buckets ?? 60, 'buckets', 1, 3_600)
  else if (options.buckets !== undefined)
    throw new OptionError('buckets', options.buckets, "no buckets unless algorithm is 'bucketed'")
  const onStoreError = checkOneOf(options.onStoreError ?? 'fail-closed', 'onStoreError', ['fail-closed', 'fail-open'])
  const timeoutMs = parseDuration(options.timeoutMs ?? 100, 'timeoutMs', { max: 60_000 })
  // 0 is none, as a policy's own field says: a policy's fields are valid options.
  const blockFor =
    options.blockFor === undefined || options.blockFor === 0
      ? 0
      : parseDuration(options.blockFor, 'blockFor', { max: MAX_HOLD_MS })
  const shadow = checkBoolean(options.shadow ?? false, 'shadow')
  const priorities = checkPolicyPriorities(options.priorities, { algorithm, calendar: calendar !== undefined, shadow })

  let fallback: Readonly<FallbackOptions> | undefined
  if (options.fallback !== undefined) {
    const raw = checkOptionNames(options.fallback, 'fallback', optionNames<FallbackOptions>({ limit: true }))
    fallback = Object.freeze({ limit: checkInteger(raw.limit, 'fallback.limit', 1, limit) })
    if (onStoreError !== 'fail-open') {
      throw new OptionError('fallback', options.fallback, "no fallback unless onStoreError is 'fail-open'")
    }
  }

  return finish(options, {
    name,
    limit,
    window,
    ...calendar,
    cost,
    scope,
    algorithm,
    ...(buckets !== undefined && { buckets }),
    onStoreError,
    timeoutMs,
    ...(fallback && { fallback }),
    blockFor,
    shadow,
    ...(priorities && { priorities }),
  })
}

/**
 * A calendar policy's period and zone, checked; undefined for a sliding window. A spread calendar policy carries
 * its own window (its longest period): the same value is accepted.
 */
function resolveCalendar(options: PolicyOptions): { period: PeriodUnit; timeZone: string } | undefined {
  if (options.period === undefined) {
    if (options.timeZone !== undefined)
      throw new OptionError('timeZone', options.timeZone, 'no timeZone without `period`: a window has no zone')
    return undefined
  }
  const period = checkOneOf(options.period, 'period', PERIOD_UNITS)
  if (options.window !== undefined && options.window !== PERIOD_MS[period])
    throw new OptionError('window', options.window, 'no window beside `period`: a policy is a window or a calendar')
  if (options.algorithm !== undefined && options.algorithm !== 'sliding-log')
    throw new OptionError('algorithm', options.algorithm, 'no algorithm on a calendar policy: its period is a count')
  return { period, timeZone: checkTimeZone(options.timeZone ?? 'UTC', 'timeZone') }
}

/** The longest slot life: the longest a Node timer waits. */
const MAX_SLOT_TTL_MS = 2_147_483_647

/**
 * An in-flight policy: its `limit` is its concurrency and its `window` its slot life, so that per-call limits,
 * headers and keys treat it as a window of slots. A rate's options that mean nothing for slots are refused.
 */
function resolveInFlightPolicy(options: PolicyOptions): Policy {
  const concurrency = checkInteger(options.concurrency, 'concurrency', 1, MAX_CONCURRENCY)
  const slotTtlMs = parseDuration(options.slotTtlMs ?? 60_000, 'slotTtlMs', { min: 1, max: MAX_SLOT_TTL_MS })
  // A spread in-flight policy carries its own limit and window: the same values are accepted.
  if (options.limit !== undefined && options.limit !== concurrency)
    throw new OptionError('limit', options.limit, 'no limit beside `concurrency`: a policy is a rate or in-flight')
  if (options.window !== undefined && options.window !== slotTtlMs)
    throw new OptionError('window', options.window, "no window beside `concurrency`: give slotTtlMs for a slot's life")
  if (options.cost !== undefined && options.cost !== 1)
    throw new OptionError('cost', options.cost, 'no cost on an in-flight policy: a call takes one slot')
  for (const option of ['buckets', 'fallback', 'period', 'timeZone', 'priorities'] as const) {
    if (options[option] !== undefined)
      throw new OptionError(option, options[option], `no ${option} on an in-flight policy: a call takes one slot`)
  }
  if (options.blockFor !== undefined && options.blockFor !== 0)
    throw new OptionError('blockFor', options.blockFor, 'no blockFor on an in-flight policy')
  if (options.algorithm !== undefined && options.algorithm !== 'sliding-log')
    throw new OptionError('algorithm', options.algorithm, 'no algorithm on an in-flight policy: slots are kept exactly')
  const name = options.name ?? `${concurrency}-in-flight`
  if (typeof name !== 'string' || !NAME_PATTERN.test(name)) {
    throw new OptionError('name', name, '1 to 64 letters, digits, `.`, `_` or `-`, starting with a letter or digit')
  }
  return finish(options, {
    name,
    limit: concurrency,
    window: slotTtlMs,
    concurrency,
    slotTtlMs,
    cost: 1,
    scope: checkOneOf(options.scope ?? 'route', 'scope', ['route', 'tenant']),
    algorithm: 'sliding-log',
    onStoreError: checkOneOf(options.onStoreError ?? 'fail-closed', 'onStoreError', ['fail-closed', 'fail-open']),
    timeoutMs: parseDuration(options.timeoutMs ?? 100, 'timeoutMs', { max: 60_000 }),
    blockFor: 0,
    shadow: checkBoolean(options.shadow ?? false, 'shadow'),
  })
}

/** Freezes a policy, marks it as made here, and keeps its bare durations for the limiter's warning. */
function finish(options: PolicyOptions, policy: Policy): Policy {
  Object.freeze(policy)
  resolved.add(policy)
  const bareOnes = [
    bareDuration('window', options.window, policy.window, policy.name),
    bareDuration('blockFor', options.blockFor, policy.blockFor, policy.name),
  ].filter((b) => b !== undefined)
  if (bareOnes.length > 0) bare.set(policy, bareOnes)
  return policy
}
