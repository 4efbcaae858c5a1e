import { OptionError, StoreError } from '../common/errors.js'
import { checkInteger, checkOptionNames, optionNames } from '../common/validate.js'
import { createWeakSignal } from '../common/weak-signal.js'
import type { Bucketed } from './bucketed.js'
import { createHolds, held } from './memory/holds.js'
import { createKeyTable, type Entry, type EntrySlot, isIdle } from './memory/key-table.js'
import { createLeases } from './memory/leases.js'
import { createSettleRefund } from './memory/settle-refund.js'
import { createSlots } from './memory/slots.js'
import { createSweep } from './memory/sweep.js'
import type { SlidingLog } from './sliding-log.js'
import {
  type HoldRequest,
  type Lease,
  type LeaseRequest,
  type LeaseResult,
  type RefundRequest,
  type SettleRequest,
  type SlotRequest,
  STORE,
  type Store,
  type StoreRefund,
  type StoreSettle,
  type WindowRequest,
  type WindowResult,
} from './store.js'

export type { EntrySlot } from './memory/key-table.js'

export interface MemoryStoreOptions {
  /**
   * The clock, in ms. Default: a monotonic clock. Inject one for tests. It must not step: the store takes a step
   * forward for time passed (every window slides by it, so a 1 h step admits a fresh window at once), and after a
   * step back it denies what was admitted before it until the clock is back there. `Date.now` steps (NTP).
   */
  clock?: () => number
  /** How often, at most, a sweep of idle keys starts (it runs a slice at a time on later calls; no timer runs). Default 10000 ms. */
  sweepIntervalMs?: number
  /**
   * The most keys held at once. A call that would add a key beyond it is refused with a StoreError (the
   * limiter then fails open or closed, per the policy); held keys keep working. Default 1 000 000: 0.3 to
   * 0.4 GB of heap for keys of a few admissions each (README, memoryStore).
   */
  maxKeys?: number
}

export interface MemoryStore extends Store {
  /** Keys held now, idle ones included until the sweep reaches them. */
  readonly size: number
  /** Drops every key whose window holds nothing, all at once; returns how many were dropped. */
  sweep(): number
  lease(request: LeaseRequest): Promise<LeaseResult>
  release(key: string, lease: Lease, units: number): Promise<void>
  refund(requests: readonly RefundRequest[], units: number, id: string): Promise<StoreRefund>
  free(slots: readonly SlotRequest[]): Promise<number>
  extend(slots: readonly SlotRequest[], ms: number): Promise<number>
  settle(requests: readonly SettleRequest[], id: string): Promise<StoreSettle>
  onSlotFree(listener: (keys: readonly string[] | undefined) => void): void
}

// A record over every option, so that an option added without its runtime name fails to compile.
const OPTION_NAMES = optionNames<MemoryStoreOptions>({ clock: true, sweepIntervalMs: true, maxKeys: true })

const timeOrigin = performance.timeOrigin
const monotonicNow = () => timeOrigin + performance.now()

/**
 * The embedded store: the same decisions as the Redis scripts, for one process. Memory stays bounded:
 * at most `maxKeys` keys, and a key whose window is empty is dropped by a sweep that runs on later calls.
 *
 * @example
 * const limiter = createRateLimiter({ store: memoryStore({ maxKeys: 100_000 }), limit: 100, window: '1m' })
 *
 * @example
 * ```ts
 * const limiter = createRateLimiter({ store: memoryStore(), limit: 5, window: '1s' })
 * ```
 */
export function memoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  checkOptionNames(options, 'memoryStore', OPTION_NAMES)
  const clock = options.clock ?? monotonicNow
  if (typeof clock !== 'function') throw new OptionError('memoryStore.clock', clock, 'a function returning ms')
  const sweepIntervalMs = checkInteger(options.sweepIntervalMs ?? 10_000, 'memoryStore.sweepIntervalMs', 1, 86_400_000)
  // A V8 Map holds at most 2^24 entries.
  const maxKeys = checkInteger(options.maxKeys ?? 1_000_000, 'memoryStore.maxKeys', 1, 2 ** 24)

  const table = createKeyTable(maxKeys)
  const { entries, drop, logEntryOf, entriesOf } = table
  const { slotResult, free, extend, onSlotFree } = createSlots(table, clock)
  const holds = createHolds(maxKeys)
  const { heldUntil, holdKey, blocked, end: endHold, dropEnded: dropEndedHolds } = holds
  const { settle, refund, dropEnded: dropEndedMarkers } = createSettleRefund(table, clock)
  const changes = createWeakSignal<[readonly string[] | undefined]>()
  const sweeper = createSweep(table, {
    maxKeys,
    sweepIntervalMs,
    start: clock(),
    onStart: (now) => dropEndedMarkers(now),
  })
  const { housekeep, sweepAll } = sweeper
  const { lease, release } = createLeases(table, holds, sweeper, clock)

  function sweep(): number {
    const now = clock()
    dropEndedHolds(now)
    dropEndedMarkers(now)
    return sweepAll(now)
  }

  /**
   * decide() for one sliding-log window, the common call, without the arrays and copies of the general case:
   * the same rules in the same order, so the model tests of one window hold for it.
   */
  function decideLog(request: WindowRequest, record: boolean, now: number, slot?: EntrySlot): WindowResult {
    const entry = logEntryOf(request, record, slot)
    const log = entry.log as SlidingLog
    const used = log.used(now, request.windowMs)
    const room = used + request.cost <= request.limit
    const until = heldUntil(request.key, now)
    const recorded = record && room && until === 0
    const at = recorded ? log.add(now, request.cost) : 0
    let result = log.result(now, request.limit, request.windowMs, request.cost, used, recorded)
    if (until) result = held(result, until, now, record)
    else if (record && !room) result = blocked(request, result, now)
    // A fresh object from log.result: the stamp is set on it rather than copied into another.
    else if (recorded) (result as { recorded?: number }).recorded = at
    if (used === 0 && !recorded && log.isEmpty(now, request.windowMs) && !entry.dropped) drop(request.key, entry)
    return result
  }

  /** All the windows admit together, or none records anything: the contract of the multi-key script. */
  function decide(requests: readonly WindowRequest[], record: boolean, now = clock()): WindowResult[] {
    housekeep(now, requests.length)
    const [only] = requests
    if (requests.length === 1 && only?.buckets !== undefined) {
      const entry = entriesOf(requests, record)[0] as Entry
      const counter = entry.counter
      const until = heldUntil(only.key, now)
      let result = (counter as Bucketed).decide(
        now,
        only.limit,
        only.windowMs,
        only.buckets,
        only.cost,
        record && !until,
      )
      if (until) result = held(result, until, now, record)
      else if (record && !result.allowed) result = blocked(only, result, now)
      else if (record) result = { ...result, recorded: now }
      if (!result.allowed || !record) {
        if ((counter as Bucketed).isEmpty(now, only.windowMs, only.buckets) && !entry.dropped) drop(only.key, entry)
      }
      return [result]
    }
    if (requests.length === 1 && only !== undefined && only.slots !== true) return [decideLog(only, record, now)]
    if (requests.some((request) => request.buckets !== undefined && request.slots !== true)) {
      throw new StoreError('a bucketed window is decided alone, not with other windows in one call')
    }
    const several = requests.length > 1
    // Each window with its own cost; a slot window asks for one slot, whatever the cost.
    const windows = entriesOf(requests, record).map((entry, i) => {
      const request = requests[i] as WindowRequest
      if (entry.slots) {
        const used = entry.slots.held(now)
        const room = used < request.limit
        return { request, entry, used, room, until: 0, allowed: room }
      }
      const used = (entry.log as SlidingLog).used(now, request.windowMs)
      const room = used + request.cost <= request.limit
      const until = heldUntil(request.key, now)
      return { request, entry, used, room, until, allowed: room && until === 0 }
    })
    // Shadow windows do not decide the call; each records what it would have admitted.
    const admitted = record && windows.every((w) => w.allowed || (several && w.request.shadow))
    const results = windows.map(({ request, entry, used, room, until, allowed }) => {
      const recorded = admitted && allowed
      if (entry.slots) return slotResult(entry.slots, request, used, recorded, now)
      const log = entry.log as SlidingLog
      const at = recorded ? log.add(now, request.cost) : undefined
      const result = log.result(now, request.limit, request.windowMs, request.cost, used, recorded)
      if (until) return held(result, until, now, record)
      if (record && !room) return blocked(request, result, now)
      return at === undefined ? result : { ...result, recorded: at }
    })
    // A peek or a denial must not leave empty entries behind (a log with an emptied entry is not empty).
    for (const { request, entry, used, allowed } of windows) {
      if (used === 0 && !(admitted && allowed) && isIdle(entry, now) && !entry.dropped) drop(request.key, entry)
    }
    return results
  }

  const store: MemoryStore = {
    [STORE]: true,
    consume: async (requests) => decide(requests, true),
    lease: async (request) => lease(request),
    release: async (key, lease, units) => release(key, lease, units),
    peek: async (requests) => decide(requests, false),
    free: async (slots) => free(slots),
    extend: async (slots, ms) => extend(slots, ms),
    settle: async (requests, id) => settle(requests, id),
    onSlotFree,
    refund: async (requests, units, id) => refund(requests, units, id),
    hold: async (requests: readonly HoldRequest[], ms: number) => {
      const now = clock()
      for (const { key } of requests) holdKey(key, now + ms, now)
      changes.emit(requests.map(({ key }) => key))
    },
    reset: async (key) => {
      const entry = entries.get(key)
      if (entry !== undefined) drop(key, entry)
      endHold(key)
      changes.emit([key])
    },
    // Several limiters on this store each have their local tier: a reset or pause through one reaches the others.
    onKeyChange: changes.add,
    sweep,
    get size() {
      return entries.size
    },
  }
  // The caller's reading of performance.now() serves as this store's own clock when that is the default one.
  const ownClock = options.clock === undefined
  const timeOf = (at: number | undefined) => (ownClock && at !== undefined ? timeOrigin + at : clock())
  inProcessStores.set(store, {
    many: (requests, at) => decide(requests, true, timeOf(at)),
    one(request, at, slot) {
      if (request.buckets !== undefined || request.slots === true)
        return decide([request], true, timeOf(at))[0] as WindowResult
      const now = timeOf(at)
      housekeep(now, 1)
      return decideLog(request, true, now, slot)
    },
  })
  return store
}

/**
 * A store's consume, answered at once; `at`, if given, is the caller's performance.now() read just before, which
 * the store takes as the decision's time when it runs on its default clock (one clock read, not two).
 */
export interface ConsumeNow {
  many(requests: readonly WindowRequest[], at: number | undefined): WindowResult[]
  /**
   * One window's consume; `slot` holds its key's entry between calls on that key (one map lookup fewer per call),
   * so a slot serves one key of one store only.
   */
  one(request: WindowRequest, at: number | undefined, slot: EntrySlot): WindowResult
}

/**
 * The stores memoryStore() made, with their consume answered at once: a copy with methods replaced
 * (`{ ...store, consume }`) is not one of them.
 */
const inProcessStores = new WeakMap<Store, ConsumeNow>()

/** Whether `store` is a memory store itself: it decides in this process and cannot hang, so a call needs no deadline. */
export function isInProcessStore(store: Store): boolean {
  return inProcessStores.has(store)
}

/** A memory store's consume without a promise (the same decisions), or undefined for any other store. */
export function consumeNowOf(store: Store): ConsumeNow | undefined {
  return inProcessStores.get(store)
}
