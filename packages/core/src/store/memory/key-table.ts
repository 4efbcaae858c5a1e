// The memory store's key table: each key's window entry, found or made for a call (all or none), and dropped.
import { describe, StoreError } from '../../common/errors.js'
import { Bucketed } from '../bucketed.js'
import { PeriodCount } from '../period-count.js'
import { SlidingLog } from '../sliding-log.js'
import { SlotSet } from '../slot-set.js'
import type { LeaseRequest, WindowRequest } from '../store.js'

/** A key's window: which algorithm made it is fixed for its life, as a Redis key's type is. */
export type Entry =
  | {
      readonly log: SlidingLog
      readonly counter?: never
      readonly slots?: never
      readonly period?: never
      windowMs: number
      dropped: boolean
    }
  | {
      readonly counter: Bucketed
      readonly log?: never
      readonly slots?: never
      readonly period?: never
      windowMs: number
      buckets: number
      dropped: boolean
    }
  | {
      readonly slots: SlotSet
      readonly log?: never
      readonly counter?: never
      readonly period?: never
      windowMs: number
      dropped: boolean
    }
  | {
      readonly period: PeriodCount
      readonly log?: never
      readonly counter?: never
      readonly slots?: never
      windowMs: number
      dropped: boolean
    }

/** Which kind of window an entry holds, or a request asks for. */
type Kind = 'log' | 'bucketed' | 'slots' | 'period'
const kindOf = (entry: Entry): Kind =>
  entry.log ? 'log' : entry.counter ? 'bucketed' : entry.slots ? 'slots' : 'period'
const KIND_NAMES: Record<Kind, string> = {
  log: 'a sliding-log',
  bucketed: 'a bucketed',
  slots: 'an in-flight',
  period: 'a calendar',
}
const kindAsked = (request: WindowRequest | LeaseRequest): Kind =>
  'slots' in request && request.slots === true
    ? 'slots'
    : 'period' in request && request.period !== undefined
      ? 'period'
      : 'buckets' in request && request.buckets !== undefined
        ? 'bucketed'
        : 'log'

/**
 * A caller's holder for one key's entry, kept between its calls on that key (a memory store's plan, see Store.plan): the entry is
 * used while the store holds it, and looked up again once the store dropped it.
 */
export interface EntrySlot {
  entry: unknown
}

export const isIdle = (entry: Entry, now: number) =>
  entry.log
    ? entry.log.isEmpty(now, entry.windowMs)
    : entry.counter
      ? entry.counter.isEmpty(now, entry.windowMs, entry.buckets)
      : entry.slots
        ? entry.slots.isEmpty(now)
        : entry.period.isEmpty(now)

export const otherAlgorithm = (key: string, entry: Entry) =>
  new StoreError(
    `key ${describe(key)} holds ${KIND_NAMES[kindOf(entry)]} window; a call of another kind of window cannot use it`,
  )

export interface KeyTable {
  readonly entries: Map<string, Entry>
  /** Forgets a key's entry; a slot that holds it looks the key up again. */
  drop(key: string, entry: Entry): void
  /** entriesOf for one sliding-log request, with no array: its key's entry, from `slot` while the store holds it. */
  logEntryOf(request: WindowRequest, create: boolean, slot: EntrySlot | undefined): Entry
  /**
   * The entries for `requests`, created (when `create`) only once every request fits: a key of the other
   * algorithm, or no room for a new key, rejects the call alone and changes nothing.
   */
  entriesOf(requests: readonly (WindowRequest | LeaseRequest)[], create: boolean): Entry[]
}

/** A key table of at most `maxKeys` keys. */
export function createKeyTable(maxKeys: number): KeyTable {
  const entries = new Map<string, Entry>()

  function drop(key: string, entry: Entry): void {
    entries.delete(key)
    entry.dropped = true
  }

  const storeFull = () =>
    new StoreError(
      `memory store full: it holds maxKeys (${maxKeys}) keys with live windows, so a new key is refused; raise maxKeys or use redisStore`,
    )

  function logEntryOf(request: WindowRequest, create: boolean, slot: EntrySlot | undefined): Entry {
    let entry = slot?.entry as Entry | undefined
    if (entry === undefined || entry.dropped) {
      entry = entries.get(request.key)
      if (entry === undefined) {
        if (create && entries.size + 1 > maxKeys) throw storeFull()
        entry = { log: new SlidingLog(), windowMs: request.windowMs, dropped: !create }
        if (create) entries.set(request.key, entry)
      } else if (entry.log === undefined) throw otherAlgorithm(request.key, entry)
      if (slot !== undefined) slot.entry = entry
    }
    entry.windowMs = request.windowMs
    return entry
  }

  function entriesOf(requests: readonly (WindowRequest | LeaseRequest)[], create: boolean): Entry[] {
    const found: (Entry | undefined)[] = []
    let missing = 0
    for (const request of requests) {
      const entry = entries.get(request.key)
      found.push(entry)
      if (entry === undefined) missing++
      else if (kindOf(entry) !== kindAsked(request)) throw otherAlgorithm(request.key, entry)
    }
    if (create && missing > 0 && entries.size + missing > maxKeys) throw storeFull()
    return requests.map((request, i) => {
      const buckets = 'buckets' in request ? request.buckets : undefined
      let entry = found[i]
      if (entry === undefined) {
        const kind = kindAsked(request)
        const { windowMs } = request
        entry =
          kind === 'log'
            ? { log: new SlidingLog(), windowMs, dropped: !create }
            : kind === 'slots'
              ? { slots: new SlotSet(), windowMs, dropped: !create }
              : kind === 'period'
                ? { period: new PeriodCount(), windowMs, dropped: !create }
                : { counter: new Bucketed(), windowMs, buckets: buckets as number, dropped: !create }
        // A peek of an unknown key decides on a detached empty entry: it records nothing, so it needs no room.
        if (create) entries.set(request.key, entry)
      }
      entry.windowMs = request.windowMs
      if (entry.counter && buckets !== undefined) entry.buckets = buckets
      return entry
    })
  }

  return { entries, drop, logEntryOf, entriesOf }
}
