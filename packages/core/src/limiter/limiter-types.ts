import type { StoreError } from '../common/errors.js'
import type { Logger } from '../common/logger.js'
import type { BreakerState } from '../store/circuit-breaker.js'
import type { Store } from '../store/store.js'
import type { ReleaseResult, SettleOptions, SettleResult } from './after-call.js'
import type { EstimateOptions } from './cost-estimates.js'
import type { Decision } from './decision.js'
import type { KeyInput } from './keys.js'
import type { LearnedLimit, Lesson } from './learned-limits.js'
import type { LocalOptions } from './local-tier.js'
import type { Policy, PolicyOptions } from './policy.js'

// The limiter's public types: its options, its calls' options, and the RateLimiter it builds.

export interface RateLimiterOptions extends Partial<PolicyOptions> {
  /** Where the windows live. Default: a new `memoryStore()` (this process only). */
  store?: Store
  /** Where the one warning per store outage (and the recovery note) go. Default: console. */
  logger?: Logger
  /** The local tier: a deny cache (on by default) and leases (off by default); false turns both off. */
  local?: LocalOptions | false
  /**
   * Several policies decided together (instead of the policy options): a call is admitted only if
   * every policy admits it, and only then counted in all of them, in one store call.
   */
  policies?: readonly (Policy | PolicyOptions)[]
  /** The most `acquire()` waiters queued per key in this process; a call beyond it rejects at once. Default 1000. */
  maxQueue?: number
  /**
   * What `cost: 'estimate'` reserves: per key, a high percentile of the costs its settles reported lately in this
   * process (`initial` until it has 10), so that a call reserves what such calls usually cost and `settle`
   * corrects it. An estimate below the true cost can put a window over its limit until the call settles: see
   * docs/in-flight.md for what is guaranteed.
   */
  estimate?: EstimateOptions
}

/** A call's own limit: a whole number, or with several policies a map from policy name to limit. */
export type CallLimit = number | Readonly<Record<string, number>>

export interface PeekOptions {
  /**
   * This call's limit, such as the tenant's plan (the window and the key stay the policy's): a whole number, or
   * with several policies a map from policy name to limit, a policy left out keeping its own. Default: the
   * policy's. A tenant that changes plan keeps its admissions: a higher limit admits the difference at once, a
   * lower one denies until the window drains to it.
   */
  limit?: CallLimit
  /**
   * A tenant's billing day, for weekly and monthly policies (`period`): a month's day from 1 to 31 (clamped to the
   * month's length: 31 starts on the 30th in a 30-day month, on the 28th or 29th in February), a week's day from 1
   * (Monday) to 7. With several such policies, a map from policy name to anchor. Default: the 1st, and Monday.
   */
  anchor?: CallAnchor
  /**
   * The call's priority class, by name, for a policy with `priorities`. Default: the last (lowest) class, so an
   * unmarked call never takes a higher class's reserve. An unknown name throws an OptionError.
   */
  priority?: string
}

/** A call's anchor: a day number, or with several calendar policies a map from policy name to day. */
export type CallAnchor = number | Readonly<Record<string, number>>

/** A call's cost: a whole number, or with several policies a map from policy name to cost. */
export type CallCost = number | Readonly<Record<string, number>>

export interface ConsumeOptions extends PeekOptions {
  /**
   * Units this call consumes. Default: the policy's `cost` (1). With several policies, a map from policy name to
   * cost gives each its own (a policy left out takes its `cost`), such as requests and tokens per minute. An
   * in-flight policy takes one slot, whatever the cost. `'estimate'` (a limiter with the `estimate` option): the
   * key's estimated cost in the estimated policy, its own `cost` in the others; `decision.reserved` says how much.
   */
  cost?: CallCost | 'estimate'
}

export interface AcquireOptions extends ConsumeOptions {
  /** The longest time to wait for admission, in ms or as a duration string. Default: no limit. */
  maxWaitMs?: number | string
  /** Stops waiting: the promise rejects with the signal's reason. */
  signal?: AbortSignal
  /**
   * How long the admitted call may take to be counted where it goes (an upstream that counts requests as they
   * arrive), in ms or as a duration: its units count from the admission until this long plus a window, so that
   * arrivals bunched by the network stay within a quota of the same limit and window. One sliding-log policy
   * without `blockFor` only. Default 0.
   */
  transitMs?: number | string
}

export interface LimiterStats {
  /** Decisions made (a call that failed closed made none). */
  readonly decisions: number
  readonly allowed: number
  readonly denied: number
  /** Of `allowed`, those a shadow policy would have denied. */
  readonly shadowDenied: number
  /** Units removed from the windows by refund(). */
  readonly refundedUnits: number
  /** Calls sent to the store for decisions. */
  readonly storeCalls: number
  /** Calls sent to the store to return a lease's unused units (off the request path). */
  readonly releaseCalls: number
  readonly localHits: number
  /** Decisions made without the store: by the fallback window, or open. */
  readonly degraded: number
  /** Calls sent to the store that failed: an error reply, a lost connection, or a missed deadline. */
  readonly storeErrors: number
  /** Of storeErrors, those that missed the deadline (timeoutMs). */
  readonly timeouts: number
  /** Calls not sent because the store's breaker was open or its client disconnected. */
  readonly shortCircuits: number
  /** Times the store's breaker opened since this limiter was created. */
  readonly breakerOpenings: number
  /** Units reserved by leases, admitted from them, dropped unused at expiry, and returned to the store. */
  readonly leasedUnits: number
  readonly leaseUsedUnits: number
  readonly expiredUnits: number
  readonly returnedUnits: number
}

/** The limiter's events; `on` returns the unsubscribe function. */
export type LimiterEvents = {
  /** Every decision counted in `stats().decisions`. */
  decision: [decision: Decision]
  /** A call sent to the store (a short-circuited one is not sent), once it settled or missed the deadline. */
  storeCall: [call: { readonly durationMs: number; readonly outcome: 'ok' | 'error' | 'timeout' }]
  /**
   * A decision could not use the store: the call was sent and failed ('error'), missed the deadline
   * ('timeout'), or was not sent because the breaker was open or the client disconnected ('short-circuit').
   */
  storeError: [error: StoreError, kind: 'error' | 'timeout' | 'short-circuit']
  /** A decision made without the store. */
  degraded: [decision: Decision]
  breakerOpen: []
  breakerClose: []
  /**
   * The limit this process holds a key to changed: learned (from the upstream's headers or its 429s, in any
   * process), or back to the policy's (`undefined`). The key is the window's store key; `policy` the name of the
   * policy whose limit it is (each policy of a limiter learns its own).
   */
  learned: [key: string, learned: LearnedLimit | undefined, policy: string]
}

/** What refund() did: `units` removed, or why none were. */
export interface RefundResult {
  readonly units: number
  /**
   * 'refunded'; 'denied' (a denial recorded nothing); 'already-refunded'; 'expired' (its units have left the
   * window, or were returned); 'not-refundable' (made without the store, failing open, or let through by a
   * shadow policy, or by another limiter); 'too-deep' (a sliding log has recorded more than 2,000 admissions at
   * later instants on the key since: the units stay until they leave the window, as a refund would rewrite each
   * of those entries).
   */
  readonly outcome: 'refunded' | 'denied' | 'already-refunded' | 'expired' | 'not-refundable' | 'too-deep'
}

export interface RateLimiter {
  /** The policy (the first one, with `policies`). */
  readonly policy: Policy
  readonly policies: readonly Policy[]
  /** The state of the store's circuit breaker; undefined for a store without one (the memory store). */
  readonly breakerState: BreakerState | undefined
  /** Admits and counts `cost` units now, or denies with the exact wait. Never waits. */
  consume(key: KeyInput, options?: ConsumeOptions): Promise<Decision>
  /** Waits, first-in first-out with this process's other waiters on the key, until admitted. */
  acquire(key: KeyInput, options?: AcquireOptions): Promise<Decision>
  /**
   * The decision one unit would get now, without consuming anything. In a limiter that learns (limitedFetch's
   * `adapt` uses it, or `learned` or `learn` was called), under the limit the fleet learned for the key, when there
   * is one (`decision.learned` says which); with several policies, each under its own (in `decision.policies`).
   */
  peek(key: KeyInput, options?: PeekOptions): Promise<Decision>
  /**
   * The limit the fleet learned for the key from its upstream (limitedFetch's `adapt`), below the policy's; undefined
   * when there is none. With several policies, of the one named (default: the first): each rate policy learns its
   * own. Read from the store at most once a window (or a second) per process, and again as soon as the store
   * announces a change.
   */
  learned(key: KeyInput, policy?: string): Promise<LearnedLimit | undefined>
  /**
   * Teaches the fleet what an upstream said (what limitedFetch does with `adapt`): `{ source: 'headers', limit }`, a
   * quota per the policy's window, lowers the key's limit to it (it lapses after two windows unless stated again;
   * one at or above the policy's ends it); `{ source: 'aimd', used? }`, a 429, cuts it to 0.7 of `used` (the units in
   * the window when the refused call was admitted) or of the limit, whichever is lower, at least 1 and at most once a
   * window, and it then grows back by 2% of the policy's limit each window (with `used`, it stays 4 windows at
   * `used - 1` before it grows past it). Kept in the store, so every process holds
   * to it. A rate policy learns (not in-flight slots, nor a calendar period); when several policies of the limiter
   * do, the lesson names one (`policy`). Resolves with the limit the key is held to now.
   */
  learn(key: KeyInput, lesson: Lesson): Promise<LearnedLimit | undefined>
  /**
   * Forgets every unit of the key. Bounded like a decision: while the store is unreachable it rejects with a
   * StoreError (at once, or at `timeoutMs`), whatever the policy's `onStoreError`.
   */
  reset(key: KeyInput): Promise<void>
  /**
   * Removes exactly the units this admitted decision recorded, atomically in every window it counted in (and what
   * a settle of it changed, if the store applied it, whether or not its answer came); a denied, already refunded or
   * expired decision is a no-op that says so. Also cached denials of the key in this process are dropped.
   */
  refund(decision: Decision): Promise<RefundResult>
  /**
   * Gives back the in-flight slots an admitted decision holds, at once, in every process (a waiting `acquire`
   * anywhere is woken). Once per decision however often it is asked; a denied, forged or foreign decision, or one
   * without slots, gives back nothing and says so.
   */
  release(decision: Decision): Promise<ReleaseResult>
  /**
   * Sets an admitted decision's units to its true cost, once known, in one atomic step: less gives the difference
   * back exactly; more records the extra at the decision's time, so later calls wait for it (a window may go over
   * its limit: `overLimit` says by how much). Once per decision; the same settle sent again (a retry after a
   * timeout) changes nothing more, nor does one after a refund.
   */
  settle(decision: Decision, options: SettleOptions): Promise<SettleResult>
  /**
   * Denies every call on the key, in every process, for `ms` (ms or a duration string): `retryAfterMs` is the pause
   * left. A longer pause in place stays. Other processes drop their cached denials and leases of the key on its message.
   */
  pause(key: KeyInput, ms: number | string): Promise<void>
  /**
   * Whether decisions come from the store now, for a readiness probe: false while the store's client is
   * disconnected or its circuit breaker is open. An open breaker that may probe (its cool-down is over, or the
   * client is ready again) is probed here with one peek, counted in `storeCalls`, so that a process that gets no
   * traffic while out of a load balancer learns of the store's return. Never rejects; always true on an in-process
   * store. On a Redis Cluster, false when any master's breaker is open.
   */
  ready(): Promise<boolean>
  stats(): LimiterStats
  on<E extends keyof LimiterEvents>(event: E, listener: (...args: LimiterEvents[E]) => void): () => void
}
