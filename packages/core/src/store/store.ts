import type { Calendar } from '../common/calendar.js'
import { describe } from '../common/errors.js'
import type { Deadline } from './guarded-call.js'

/** The major version of the store contract this package speaks: the `v1` of its brand. */
export const STORE_CONTRACT_VERSION = 1

/** The brand (and interface version) of a fleetlimit store. */
export const STORE = Symbol.for(`fleetlimit.store.v${STORE_CONTRACT_VERSION}`)

/** One sliding-window question about one key. */
export interface WindowRequest {
  /** The key without the store's prefix. A key is always asked with one window (and buckets): keys name theirs. */
  readonly key: string
  readonly limit: number
  readonly windowMs: number
  readonly cost: number
  /** Set for the bucketed algorithm: the window is kept as this many sub-window counters. */
  readonly buckets?: number
  /** A consume this window denies for lack of room holds its key this long (ms): every call is denied meanwhile. */
  readonly blockMs?: number
  /**
   * With several windows in one call: this window's decision is reported but does not decide the call; it records
   * the call's units when the call is admitted and it has room itself.
   */
  readonly shadow?: boolean
  /**
   * An in-flight window: at most `limit` slots held at once, each a lease that ends `windowMs` after it was taken
   * (its TTL) unless freed or extended first. A consume takes one slot, whatever its `cost`; its result's `recorded`
   * is the slot's id, which `free` and `extend` name. A denial's `retryAfterMs` is the wait until the soonest slot
   * expires; `resetMs` until the last one does.
   */
  readonly slots?: boolean
  /**
   * A calendar window: a count that starts over at each period's start (common/calendar.ts's periodAt, by the
   * store's clock), in place of a sliding window (`windowMs` is then the longest period). A denial waits, and
   * `resetMs` counts, until the next period starts. Its key holds the period's start and count, whatever the limit.
   */
  readonly period?: Calendar
  /**
   * A priority class's share window, beside the policy's own window in one call (a sliding log, no buckets): it
   * records the call's units whenever the call is admitted, room or not, and denies nothing while its key is not
   * held. While it is held (`hold`, by a waiter of a higher class), it is enforced with its `limit`: a call is
   * admitted only if the class's own use plus `cost` fits, and a denial's wait is the earlier of the hold's end and
   * when the cost fits. A hold on it caps the class to its share; it does not deny every call, as a pause does.
   */
  readonly share?: true
}

/** A slot of an in-flight window to free or extend: the window's key and the slot's id (a result's `recorded`). */
export interface SlotRequest {
  readonly key: string
  readonly slot: number
}

/**
 * A window to settle an admission in: as for a refund, plus `delta`, the units to add at the admission's time
 * (negative: to give back).
 */
export interface SettleRequest {
  readonly key: string
  readonly windowMs: number
  readonly recorded: number
  readonly delta: number
  /** The window is a calendar period's count: the admission's units are moved if its period is still current. */
  readonly period?: boolean
}

/**
 * What a store's settle did: 'settled' (every window's delta applied, or none had its entry left: see `used`),
 * 'already-settled' (a settle of the same id was applied before: nothing changed), 'refunded' (a refund of the same
 * id was applied: nothing changed), 'expired' (no window still holds the admission's entry: nothing changed),
 * 'too-deep' (an entry has more than MAX_REFUND_TAIL entries after it: nothing changed). `used`: the units each
 * window holds now, after the settle, in the requests' order.
 */
export interface StoreSettle {
  readonly outcome: 'settled' | 'already-settled' | 'refunded' | 'expired' | 'too-deep'
  readonly used: readonly number[]
}

/** A window to take a refund from: its key and window (and buckets), and when the units were recorded there. */
export interface RefundRequest {
  readonly key: string
  readonly windowMs: number
  readonly buckets?: number
  readonly recorded: number
  /** The units the admission recorded in this window, when not the refund's `units` (a cost per window). */
  readonly units?: number
  /** The window is a calendar period's count: the units are taken back if their period is still current. */
  readonly period?: boolean
}

/**
 * What a store's refund did: `units` removed (the most from one window), or why none were: 'expired' (none left in
 * any window), 'already-refunded' (a refund of the same id was applied before), 'too-deep' (the admission's entry
 * has more than MAX_REFUND_TAIL entries after it in a sliding log; nothing was changed).
 */
export interface StoreRefund {
  readonly units: number
  readonly outcome: 'refunded' | 'expired' | 'already-refunded' | 'too-deep'
}

/** A key to hold: its window (and its algorithm's buckets), as in the requests that decide it. */
export interface HoldRequest {
  readonly key: string
  readonly windowMs: number
  readonly buckets?: number
  /** The key is a calendar period's count. */
  readonly period?: boolean
}

/** A note as read or written: its value (undefined: none) and the store's time then, in ms. */
export interface NoteState {
  readonly value: string | undefined
  readonly now: number
}

/** What writeNote did: whether it wrote, and the note as it is now. */
export interface NoteWrite extends NoteState {
  readonly written: boolean
}

/** A store's answer for one window, in the scripts' terms. */
export interface WindowResult {
  /** This window alone has room for the cost (it was recorded only if every window of the call had room). */
  readonly allowed: boolean
  readonly remaining: number
  readonly retryAfterMs: number
  readonly resetMs: number
  /** The store clock's time of the decision, in ms (the server's clock for Redis). */
  readonly now: number
  /** When this call's units were recorded in this window, in the store's own terms (what a refund names); unset when none were. */
  readonly recorded?: number
}

/** A request to reserve units of one window for this process (lua/sliding-log.lua's 'l' op). */
export interface LeaseRequest {
  readonly key: string
  readonly limit: number
  readonly windowMs: number
  /** The most units to reserve. */
  readonly want: number
  /** The fewest units worth a lease: the cost of the call that asks. */
  readonly min: number
  /** On denial, the wait reported is until this many units fit. */
  readonly waitFor: number
  /**
   * The lease's life: its units may be used until then. On Redis, at most 2^39 µs (about 6 days) for a window of
   * up to 2^37 µs (about 38 hours), 2^47 µs otherwise: a longer lease fails with a ReplyError, and records nothing.
   */
  readonly ttlMs: number
}

/** A reservation: how many units, of which window, recorded when, so that unused ones can be returned. */
export interface Lease {
  readonly windowMs: number
  /** The store time every reserved unit was recorded at, in ms: the lease's expiry, or later. */
  readonly score: number
  readonly granted: number
  /** The store's own stamp of that time, as a result's `recorded`: what a refund of leased units names. */
  readonly recorded: number
}

export interface LeaseResult extends WindowResult {
  /** Units reserved (0 when denied). */
  readonly lease: Lease
}

/**
 * What a store compiled for the calls of one key (Store.plan), made once and given to each of them: their
 * requests, and whatever the store keeps to answer them without building the call again.
 */
export interface StorePlan {
  readonly requests: readonly WindowRequest[]
}

/**
 * Where windows live: `redisStore(client)` for a fleet, `memoryStore()` for one process. Each call takes
 * one or more windows (one per policy) and answers for each, at one instant.
 */
export interface Store {
  readonly [STORE]: true
  /**
   * Records every request's cost only if every window has room; a denial records nothing. A remote store
   * records nothing after `deadline.at` (performance.now() time, read when sending): its caller has given up.
   */
  consume(requests: readonly WindowRequest[], deadline?: Deadline): Promise<WindowResult[]>
  /**
   * Compiles the requests of one key's calls (made again and again with the same windows, limits and cost) into a
   * plan that `decide` or `decideNow` takes. Optional: a store without it is asked `consume(requests)` each time.
   */
  plan?(requests: readonly WindowRequest[]): StorePlan
  /** consume() of a plan this store made: the same decision, without building the call again. */
  decide?(plan: StorePlan, deadline?: Deadline): Promise<WindowResult[]>
  /**
   * For a store in this process, which cannot hang: decide() answered at once. A limiter calls it with no deadline
   * and no guard. `at`, if given, is the caller's performance.now() read in this tick, which the store may take as
   * the decision's time.
   */
  decideNow?(plan: StorePlan, at?: number): WindowResult[]
  /** Decides and records nothing; `remaining` is what each window holds now. */
  peek(requests: readonly WindowRequest[]): Promise<WindowResult[]>
  /** Forgets every unit of a key. */
  reset(key: string): Promise<void>
  /** Reserves units for this process; their admissions are then made locally (the local tier's leases). */
  lease?(request: LeaseRequest, deadline?: Deadline): Promise<LeaseResult>
  /** Returns `units` unused units of a lease. */
  release?(key: string, lease: Lease, units: number): Promise<void>
  /**
   * Holds keys for `ms`: every consume, peek and lease on them is denied until then, with the wait until then (a
   * share window's key is enforced with its limit instead: see WindowRequest.share). A longer hold already in place
   * stays; a shorter one is extended.
   */
  hold(requests: readonly HoldRequest[], ms: number): Promise<void>
  /**
   * Removes `units` (or a request's own) recorded at `recorded` (a result's stamp) from each window, if still in
   * it: an admission refunded. `id` names the admission, as its settle's does: what a settle of that id moved is
   * taken back too, whether or not its caller heard the answer, so that the refund removes exactly what the
   * admission holds. At most once per `id`, however often it is sent (a retry after a timeout sends the same id); a
   * remote store applies nothing after `deadline.at`, as for consume.
   */
  refund?(requests: readonly RefundRequest[], units: number, id: string, deadline?: Deadline): Promise<StoreRefund>
  /**
   * Frees slots of in-flight windows; returns how many were still held (a slot freed before, or expired, is not).
   * Every process's `onSlotFree` listeners hear of each key that had a slot freed.
   */
  free?(slots: readonly SlotRequest[]): Promise<number>
  /**
   * Keeps slots held until `ms` from now (a slot held longer keeps its end); returns how many were still held
   * (a freed or expired slot is not taken again).
   */
  extend?(slots: readonly SlotRequest[], ms: number): Promise<number>
  /**
   * Adds each request's `delta` units (negative: gives them back, at most what the entry holds) at the time they
   * were recorded, in one atomic step, if the entry is still in its window: an admission settled to its true cost.
   * At most once per `id` (a retry after a timeout sends the same id), and not after a refund of that id (see
   * refund); nothing is applied after `deadline.at`. Every process's `onUnitsBack` listeners hear of the keys a
   * settle gave units back on.
   */
  settle?(requests: readonly SettleRequest[], id: string, deadline?: Deadline): Promise<StoreSettle>
  /**
   * Tells `listener` (held weakly, as for onKeyChange) of every settle that gave units back through this store in
   * any process, with the keys (without the prefix); `undefined` when messages may have been missed. Calls waiting
   * for room on those keys may fit now.
   */
  onUnitsBack?(listener: (keys: readonly string[] | undefined) => void): void
  /**
   * Tells `listener` (held weakly, as for onKeyChange) of every slot freed through this store in any process, with
   * the keys (without the prefix); `undefined` when messages may have been missed.
   */
  onSlotFree?(listener: (keys: readonly string[] | undefined) => void): void
  /**
   * A note kept beside a window key (what a fleet learned of an upstream's quota): its value and the store's time.
   * Notes are few, short strings; each expires.
   */
  readNote?(key: string): Promise<NoteState>
  /**
   * Sets the note of `key` (a window key, without the prefix) to `value` for `ttlMs`, or removes it (`value`
   * undefined), in one atomic step, if it holds `expected` now: a string, that exact value; null, no note;
   * undefined, anything. A note written or removed is a change of `key` that every process's onKeyChange hears.
   */
  writeNote?(key: string, value: string | undefined, ttlMs: number, expected?: string | null): Promise<NoteWrite>
  /** For a remote store: false while its connection is down, so that limiters do not send at all. */
  isConnected?(): boolean
  /**
   * For a remote store: when its connection last became ready (performance.now() time); +Infinity while its
   * first connection is being made; undefined while a lost one is.
   */
  readySince?(): number | undefined
  /** For a remote store: the client's last connection error, which says why it is disconnected. */
  lastError?(): unknown
  /**
   * Tells `listener` (held weakly: its owner keeps it) of every reset and hold of a key made through this store in
   * any process, with the keys (without the prefix); `undefined` when any key may have changed (a message that
   * may have been missed, or one an operator sent for every key). What a local tier's cached answers rest on.
   */
  onKeyChange?(listener: (keys: readonly string[] | undefined) => void): void
}

/** The message that says every key may have changed (keys hold no '*' of their own: see keys.ts). */
export const EVERY_KEY = '*'

/** The keys a settle gave units back on: its windows with a negative delta, once it is 'settled'. */
export function keysGivenBack(requests: readonly SettleRequest[], settled: StoreSettle): string[] {
  return settled.outcome === 'settled' ? requests.filter((r) => r.delta < 0).map((r) => r.key) : []
}

export function isStore(value: unknown): value is Store {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[STORE] === true
}

/** Every method of the contract, required (true) or optional: a new method without its entry fails to compile. */
const METHODS: { readonly [K in Exclude<keyof Store, typeof STORE>]-?: boolean } = {
  consume: true,
  plan: false,
  decide: false,
  decideNow: false,
  peek: true,
  reset: true,
  hold: true,
  lease: false,
  release: false,
  refund: false,
  free: false,
  extend: false,
  settle: false,
  onUnitsBack: false,
  onSlotFree: false,
  readNote: false,
  writeNote: false,
  isConnected: false,
  readySince: false,
  lastError: false,
  onKeyChange: false,
}
const REQUIRED = Object.keys(METHODS).filter((name) => METHODS[name as keyof typeof METHODS])
const OPTIONAL = Object.keys(METHODS).filter((name) => !METHODS[name as keyof typeof METHODS])
const list = (names: readonly string[]) => `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`

/**
 * What a branded store lacks of the contract's methods, said for an error message; undefined when it has every
 * required one, and each optional one it has is a function. The brand alone would let a half-made store fail on
 * every call instead.
 */
export function contractGap(store: object): string | undefined {
  const methods = store as Record<string, unknown>
  const missing = REQUIRED.find((name) => typeof methods[name] !== 'function')
  const odd = OPTIONAL.find((name) => methods[name] !== undefined && typeof methods[name] !== 'function')
  if (missing === undefined && odd === undefined) return undefined
  const gap =
    missing !== undefined && methods[missing] === undefined
      ? `it has no \`${missing}\` method`
      : `it has \`${missing ?? odd}\`, which is not a function (got ${describe(methods[(missing ?? odd) as string])})`
  return `${gap} (a store has ${list(REQUIRED)}; ${list(OPTIONAL)} are optional, and functions when given)`
}

const BRAND = /^fleetlimit\.store\.v(\d+)$/

/** The store contract versions whose brand `value` carries (`Symbol.for('fleetlimit.store.v<n>')` set to true). */
export function contractVersions(value: object): number[] {
  const versions: number[] = []
  for (const symbol of Object.getOwnPropertySymbols(value)) {
    const version = BRAND.exec(Symbol.keyFor(symbol) ?? '')?.[1]
    if (version !== undefined && (value as Record<symbol, unknown>)[symbol] === true) versions.push(Number(version))
  }
  return versions
}
