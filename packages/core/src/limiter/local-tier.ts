import { type Duration, parseDuration } from '../common/duration.js'
import { OptionError } from '../common/errors.js'
import { monotonicNow, startTimer, type Timer } from '../common/timer.js'
import { checkInteger, checkOptionNames, optionNames } from '../common/validate.js'
import type { Lease, LeaseResult, Store } from '../store/store.js'
import type { Decision } from './decision.js'
import { createDenyCache, type DenialSlot, type DenyEntry, type Limits } from './deny-cache.js'

export interface LocalOptions {
  /** Deny locally, with no store call, a key the store denied, until its wait has passed. Default: on. */
  denyCache?: boolean | { size?: number }
  /**
   * Reserve several units of a hot key per store call and admit from them locally: 'auto' sizes each lease
   * from this process's recent rate (at most a tenth of the limit); a number fixes the size. Default: off.
   */
  lease?: 'auto' | number | false
  /** How long a lease's units may be used. Default: a fiftieth of the window, from 5 ms to 1 s. */
  leaseTtlMs?: Duration
}

/** A local tier's counts before it counted anything (and a limiter's with no local tier). */
export const noLocalCounts = (): LocalCounters => ({
  localHits: 0,
  releaseCalls: 0,
  leasedUnits: 0,
  leaseUsedUnits: 0,
  expiredUnits: 0,
  returnedUnits: 0,
})

/** What the local tier counted: part of the limiter's stats(). */
export interface LocalCounters {
  localHits: number
  releaseCalls: number
  leasedUnits: number
  leaseUsedUnits: number
  expiredUnits: number
  returnedUnits: number
}

interface LeaseEntry {
  readonly storeKey: string
  readonly lease: Lease
  /** The limit it was granted under: it serves calls under that limit only. */
  readonly limit: number
  readonly expiresAt: number
  /** The window's remaining units and reset just after the lease, and when that was. */
  readonly remaining: number
  readonly resetMs: number
  readonly at: number
  used: number
  timer: Timer | undefined
}

/** A local decision; an admission from a lease names it, so that the admission can be refunded. */
export interface LocalHit {
  readonly decision: Decision
  readonly lease?: { readonly storeKey: string; readonly lease: Lease }
}

export interface LocalTier {
  /** Notes a call, for the rate that sizes leases. */
  observe(id: string, cost: number): void
  /**
   * A decision made here, with no store call (and the lease it took its units from), or undefined when the store
   * must decide.
   */
  tryLocal(id: string, cost: number, limits: Limits): LocalHit | undefined
  /**
   * tryLocal for a limiter without leases: a cached denial's answer, or undefined when the store must decide.
   * `slot` keeps the entry found for `id` between calls of one plan.
   */
  tryDenial(id: string, cost: number, limits: Limits, slot?: DenialSlot): Decision | undefined
  /** The lease worth asking for now under `limit`, or undefined to ask for this call alone. */
  leasePlan(id: string, cost: number, limit: number): { readonly size: number; readonly ttlMs: number } | undefined
  /** Learns from a store decision asked at `sentAt` (local time) under `limits`. */
  remember(id: string, cost: number, decision: Decision, sentAt: number, limits: Limits): void
  /** Takes a granted lease of `ttlMs` under `limit`; `cost` of its units were admitted by the call that asked. */
  addLease(
    id: string,
    storeKey: string,
    result: LeaseResult,
    ttlMs: number,
    sentAt: number,
    cost: number,
    limit: number,
  ): void
  forget(id: string): void
  /**
   * Keys reset or held in some process (undefined: any key): their cached denials and leases go, and answers to
   * questions sent before now are not cached. The store calls it (Store.onKeyChange); tests may too.
   */
  keysChanged(keys: readonly string[] | undefined): void
  /** Drops a cached denial of the key (units were refunded: the store may admit again). */
  forgetDenial(id: string): void
  readonly now: () => number
  /** What this tier counted so far. */
  stats(): Readonly<LocalCounters>
}

// A lease is one entry in the key's log whatever its size; it stays a small share of the limit, so that one
// process cannot hold what the others need.
const MAX_LEASE_SHARE = 0.1
// An 'auto' lease only for a key with at least this many units asked for in the last moments: one call
// says nothing of a rate, and a lease that a cold key cannot use costs a second round trip to return.
const MIN_RECENT_UNITS = 2
// Rates are averaged over about this long, so a lease follows the traffic of the last moments.
const RATE_HORIZON_MS = 250

const LOCAL_OPTION_NAMES = optionNames<LocalOptions>({ denyCache: true, lease: true, leaseTtlMs: true })

/** Validates `local` options for a limiter with this policy; undefined when the tier is off. */
export function resolveLocal(value: unknown, limit: number, windowMs: number) {
  if (value === false) return undefined
  const options = checkOptionNames(value ?? {}, 'local', LOCAL_OPTION_NAMES) as LocalOptions
  let denyCacheSize = 10_000
  if (options.denyCache === false) denyCacheSize = 0
  else if (typeof options.denyCache === 'object' && options.denyCache !== null) {
    checkOptionNames(options.denyCache, 'local.denyCache', ['size'])
    denyCacheSize = checkInteger(options.denyCache.size ?? 10_000, 'local.denyCache.size', 1, 10_000_000)
  } else if (options.denyCache !== undefined && options.denyCache !== true) {
    throw new OptionError('local.denyCache', options.denyCache, 'true, false or { size }')
  }
  const lease = options.lease ?? false
  if (lease !== false && lease !== 'auto') checkInteger(lease, 'local.lease', 2, Math.max(2, limit))
  const defaultTtl = Math.min(1_000, Math.max(5, Math.round(windowMs / 50)))
  const leaseTtlMs = parseDuration(options.leaseTtlMs ?? defaultTtl, 'local.leaseTtlMs', { max: windowMs })
  // A saturated key's leases may live a little longer, to be used whole: at most a twentieth of the window.
  const maxLeaseTtlMs = Math.max(leaseTtlMs, Math.round(windowMs / 20))
  return { denyCacheSize, lease, leaseTtlMs, maxLeaseTtlMs }
}

/** Sets `id` as the newest of `map`, dropping the oldest beyond `max`. */
function touch<V>(map: Map<string, V>, id: string, value: V, max: number) {
  map.delete(id)
  map.set(id, value)
  // Oldest first: a Map keeps insertion order, so this is a least-recently-used bound.
  if (map.size > max) map.delete(map.keys().next().value as string)
}

/** A decision `elapsed` ms on, from `source`: one new object, no spread, its fields in the decision's order. */
export function age(decision: Decision, elapsed: number, source: Decision['source']): Decision {
  const aged: { -readonly [K in keyof Decision]: Decision[K] } = {
    allowed: decision.allowed,
    limit: decision.limit,
    remaining: decision.remaining,
    retryAfterMs: Math.max(0, Math.ceil(decision.retryAfterMs - elapsed)),
    resetMs: Math.max(0, Math.ceil(decision.resetMs - elapsed)),
    source,
    policy: decision.policy,
  }
  if (decision.policies) aged.policies = decision.policies.map((d) => age(d, elapsed, d.source))
  if (decision.shadowDenied !== undefined) aged.shadowDenied = decision.shadowDenied
  if (decision.shadow !== undefined) aged.shadow = decision.shadow
  return aged
}

/**
 * A cached denial `elapsed` ms on. The calls of one millisecond read the same figures, so they share the answer
 * made last while its figures hold: a denied hot key costs no new object per call.
 */
export function agedDenial(denial: DenyEntry, elapsed: number): Decision {
  const { decision, aged } = denial
  if (
    aged !== undefined &&
    aged.retryAfterMs === Math.max(0, Math.ceil(decision.retryAfterMs - elapsed)) &&
    aged.resetMs === Math.max(0, Math.ceil(decision.resetMs - elapsed))
  ) {
    return aged
  }
  const answer = age(decision, elapsed, 'local')
  // Several policies count down apart: their answer is made anew.
  if (decision.policies === undefined) denial.aged = answer
  return answer
}

/**
 * What a denial may answer later: with several policies, those that denied. The others' figures change with
 * every call counted in them meanwhile (another route's, another process's), which the cache cannot see.
 */
function known(decision: Decision): Decision {
  const { policies } = decision
  if (policies === undefined || policies.every((d) => !d.allowed)) return decision
  return { ...decision, policies: policies.filter((d) => !d.allowed) }
}

/**
 * The local tier: a deny cache and leases, both exact. A cached denial is the store's own answer counting
 * down (from the time the question was sent, so it never outlives the store's); a lease's units are
 * recorded in the shared window at the lease's expiry, so every use before expiry is covered there.
 */
export function createLocalTier(
  config: NonNullable<ReturnType<typeof resolveLocal>>,
  policy: { readonly name: string },
  store: Store,
): LocalTier {
  const counters = noLocalCounts()
  const now = monotonicNow
  const denials = createDenyCache(config.denyCacheSize)
  const leases = new Map<string, LeaseEntry>()
  // Per key: the recent rate of units asked for, and when the store last denied it (a saturated key).
  const rates = new Map<string, { units: number; at: number; deniedAt: number }>()
  const bound = Math.max(config.denyCacheSize, 1_000)
  // When a key last changed in the store (a reset or a hold, in any process): a store answer to a question sent
  // before it may predate the change, so it is not cached. Any key's change counts: they are rare.
  let changedAt = Number.NEGATIVE_INFINITY

  function expire(id: string, entry: LeaseEntry) {
    entry.timer?.cancel()
    if (leases.get(id) === entry) leases.delete(id)
    const unused = entry.lease.granted - entry.used
    if (unused <= 0) return
    counters.expiredUnits += unused
    if (!store.release) return
    counters.releaseCalls++
    // Returning is a courtesy to other processes: an unreturned unit leaves the window by itself.
    store.release(entry.storeKey, entry.lease, unused).then(
      () => {
        counters.returnedUnits += unused
      },
      () => {},
    )
  }

  // Resets and pauses made in any process reach this tier: held weakly by the store, kept alive by the tier.
  if (config.denyCacheSize > 0 || config.lease !== false) store.onKeyChange?.(keysChanged)

  /** The cached denial of `id` that answers this call at `at`, aged; an ended one is dropped. */
  function denialAt(id: string, cost: number, limits: Limits, at: number, slot?: DenialSlot): Decision | undefined {
    let denial = slot?.denial
    if (denial === undefined || denial.dropped) {
      denial = denials.get(id)
      if (denial === undefined) return undefined
      if (slot !== undefined) slot.denial = denial
    }
    if (at < denial.until && cost >= denial.cost && denial.limits === limits) {
      counters.localHits++
      return agedDenial(denial, at - denial.at)
    }
    if (at >= denial.until) denials.delete(id)
    return undefined
  }

  return {
    now,
    stats: () => ({ ...counters }),
    observe(id, cost) {
      if (config.lease !== 'auto') return
      const at = now()
      const previous = rates.get(id)
      if (!previous) {
        touch(rates, id, { units: cost, at, deniedAt: Number.NEGATIVE_INFINITY }, bound)
        return
      }
      // Updated in place: the map's order is then first-seen, so a bounded map drops its oldest keys first.
      previous.units = previous.units * Math.exp(-(at - previous.at) / RATE_HORIZON_MS) + cost
      previous.at = at
    },
    tryLocal(id, cost, limits) {
      // Nothing cached, nothing leased: the store decides, with no clock read.
      if (leases.size === 0 && denials.size === 0) return undefined
      const at = now()
      const lease = leases.size === 0 ? undefined : leases.get(id)
      if (lease && lease.limit === limits && at < lease.expiresAt && lease.lease.granted - lease.used >= cost) {
        lease.used += cost
        counters.leaseUsedUnits += cost
        counters.localHits++
        const remaining = lease.remaining + lease.lease.granted - lease.used
        const resetMs = Math.max(0, Math.ceil(lease.resetMs - (at - lease.at)))
        const { limit } = lease
        const decision: Decision = {
          allowed: true,
          limit,
          remaining,
          retryAfterMs: 0,
          resetMs,
          source: 'local',
          policy: policy.name,
        }
        return { decision, lease: { storeKey: lease.storeKey, lease: lease.lease } }
      }
      const decision = denialAt(id, cost, limits, at)
      return decision && { decision }
    },
    tryDenial(id, cost, limits, slot) {
      return denials.size === 0 ? undefined : denialAt(id, cost, limits, now(), slot)
    },
    leasePlan(id, cost, limit) {
      if (config.lease === false) return undefined
      if (config.lease !== 'auto')
        return config.lease > cost ? { size: config.lease, ttlMs: config.leaseTtlMs } : undefined
      const entry = rates.get(id)
      if (!entry) return undefined
      const perMs = entry.units / RATE_HORIZON_MS
      const cap = Math.max(1, Math.floor(limit * MAX_LEASE_SHARE))
      // A key the store denied lately is saturated: take a whole share at once, for as long as this
      // process needs to use it (within bounds: a lease's life delays its units' return to the window).
      const saturated = now() - entry.deniedAt < RATE_HORIZON_MS
      if (!saturated && entry.units < MIN_RECENT_UNITS) return undefined
      const size = saturated ? cap : Math.min(Math.ceil(perMs * config.leaseTtlMs), cap)
      const ttlMs = saturated
        ? Math.min(config.maxLeaseTtlMs, Math.max(config.leaseTtlMs, Math.ceil(size / perMs)))
        : config.leaseTtlMs
      return size > cost ? { size, ttlMs } : undefined
    },
    remember(id, cost, decision, sentAt, limits) {
      if (decision.allowed || decision.retryAfterMs <= 0) return
      const rate = rates.get(id)
      if (rate) rate.deniedAt = sentAt
      if (config.denyCacheSize === 0 || sentAt <= changedAt) return
      const until = sentAt + decision.retryAfterMs
      denials.set(id, {
        until,
        cost,
        limits,
        decision: known(decision),
        at: sentAt,
        dropped: false,
        aged: undefined,
      })
    },
    addLease(id, storeKey, result, ttlMs, sentAt, cost, limit) {
      const previous = leases.get(id)
      if (previous) expire(id, previous)
      const { lease } = result
      counters.leasedUnits += lease.granted
      counters.leaseUsedUnits += cost
      const entry: LeaseEntry = {
        storeKey,
        lease,
        limit,
        // Measured from when the lease was asked for: the store granted it no earlier, so no unit is
        // used after the score it was recorded with.
        expiresAt: sentAt + ttlMs,
        remaining: result.remaining,
        resetMs: result.resetMs,
        at: sentAt,
        used: cost,
        timer: undefined,
      }
      // Asked before the key last changed: its units may be gone (a reset), so none is used here.
      if (sentAt <= changedAt) {
        expire(id, entry)
        return
      }
      if (lease.granted > cost) {
        entry.timer = startTimer(() => expire(id, entry), entry.expiresAt - now(), { unref: true })
      }
      touch(leases, id, entry, bound)
    },
    forgetDenial(id) {
      denials.delete(id)
    },
    forget,
    keysChanged,
  }

  function forget(id: string) {
    denials.delete(id)
    const lease = leases.get(id)
    if (lease) expire(id, lease)
  }

  function keysChanged(keys: readonly string[] | undefined) {
    changedAt = now()
    if (keys === undefined) {
      denials.clear()
      for (const [id, lease] of leases) expire(id, lease)
      return
    }
    denials.dropKeys(keys)
    for (const key of keys) {
      const lease = leases.get(key)
      if (lease) expire(key, lease)
    }
  }
}
