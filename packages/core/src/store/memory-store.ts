import { OptionError } from '../common/errors.js'
import { checkInteger, checkOptionNames, optionNames } from '../common/validate.js'
import { createWeakSignal } from '../common/weak-signal.js'
import { createDecisions } from './memory/decisions.js'
import { createHolds } from './memory/holds.js'
import { createKeyTable, type EntrySlot } from './memory/key-table.js'
import { createLeases } from './memory/leases.js'
import { createNotes } from './memory/notes.js'
import { createSettleRefund } from './memory/settle-refund.js'
import { createSlots } from './memory/slots.js'
import { createSweep } from './memory/sweep.js'
import {
  type HoldRequest,
  keysGivenBack,
  type Lease,
  type LeaseRequest,
  type LeaseResult,
  type NoteState,
  type NoteWrite,
  type RefundRequest,
  type SettleRequest,
  type SlotRequest,
  STORE,
  type Store,
  type StorePlan,
  type StoreRefund,
  type StoreSettle,
  type WindowRequest,
  type WindowResult,
} from './store.js'

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
  onUnitsBack(listener: (keys: readonly string[] | undefined) => void): void
  readNote(key: string): Promise<NoteState>
  writeNote(key: string, value: string | undefined, ttlMs: number, expected?: string | null): Promise<NoteWrite>
  plan(requests: readonly WindowRequest[]): StorePlan
  decideNow(plan: StorePlan, at?: number): WindowResult[]
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
  const holds = createHolds(maxKeys)
  const slots = createSlots(table, clock)
  const markers = createSettleRefund(table, clock)
  const sweeper = createSweep(table, { maxKeys, sweepIntervalMs, start: clock(), onStart: markers.dropEnded })
  const leases = createLeases(table, holds, sweeper, clock)
  const { decide, decideLog } = createDecisions(table, holds, slots, sweeper, clock)
  const { housekeep } = sweeper
  const { entries } = table
  const changes = createWeakSignal<[readonly string[] | undefined]>()
  const unitsBack = createWeakSignal<[readonly string[] | undefined]>()
  const notes = createNotes(maxKeys, clock)

  function sweep(): number {
    const now = clock()
    holds.dropEnded(now)
    markers.dropEnded(now)
    return sweeper.sweepAll(now)
  }

  const store: Omit<MemoryStore, 'plan' | 'decideNow'> = {
    [STORE]: true,
    consume: async (requests) => decide(requests, true),
    lease: async (request) => leases.lease(request),
    release: async (key, lease, units) => leases.release(key, lease, units),
    peek: async (requests) => decide(requests, false),
    free: async (requests) => slots.free(requests),
    extend: async (requests, ms) => slots.extend(requests, ms),
    settle: async (requests, id) => {
      const settled = markers.settle(requests, id)
      const back = keysGivenBack(requests, settled)
      if (back.length > 0) unitsBack.emit(back)
      return settled
    },
    onUnitsBack: unitsBack.add,
    onSlotFree: slots.onSlotFree,
    refund: async (requests, units, id) => markers.refund(requests, units, id),
    hold: async (requests: readonly HoldRequest[], ms: number) => {
      const now = clock()
      for (const { key } of requests) holds.holdKey(key, now + ms, now)
      changes.emit(requests.map(({ key }) => key))
    },
    reset: async (key) => {
      const entry = entries.get(key)
      if (entry !== undefined) table.drop(key, entry)
      holds.end(key)
      changes.emit([key])
    },
    readNote: async (key) => notes.read(key),
    writeNote: async (key, value, ttlMs, expected) => {
      const write = notes.write(key, value, ttlMs, expected)
      if (write.written) changes.emit([key])
      return write
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
  // Not enumerable: a copy of the store made to replace its consume (`{ ...store, consume }`) decides through it.
  return Object.defineProperties(store, {
    plan: {
      value: (requests: readonly WindowRequest[]): MemoryPlan => ({
        requests,
        log: onlyLog(requests),
        entry: undefined,
      }),
    },
    decideNow: {
      value(plan: MemoryPlan, at?: number): WindowResult[] {
        const now = timeOf(at)
        const { log } = plan
        if (log === undefined) return decide(plan.requests, true, now)
        housekeep(now, 1)
        return [decideLog(log, true, now, plan)]
      },
    },
  }) as MemoryStore
}

/**
 * A memory store's plan: its requests, the request of its one sliding-log window when that is all they are (the
 * common call, which decideLog decides), and (as an EntrySlot) the entry of its one key between calls.
 */
interface MemoryPlan extends StorePlan, EntrySlot {
  readonly log: WindowRequest | undefined
}

/** The request of a call of one plain sliding-log window; undefined for any other call. */
function onlyLog(requests: readonly WindowRequest[]): WindowRequest | undefined {
  const [request] = requests
  if (requests.length !== 1 || request === undefined) return undefined
  const plain =
    request.buckets === undefined && request.slots !== true && request.period === undefined && request.share !== true
  return plain ? request : undefined
}
