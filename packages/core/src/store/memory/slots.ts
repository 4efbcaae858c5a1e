// The memory store's in-flight slots: one taken for a call (its id), freed or extended, and who hears a free.
import { createWeakSignal } from '../../common/weak-signal.js'
import type { SlotSet } from '../slot-set.js'
import type { SlotRequest, WindowRequest, WindowResult } from '../store.js'
import { type KeyTable, otherAlgorithm } from './key-table.js'

export interface Slots {
  /** A slot window's answer; `take`: a slot is taken for the call, its id the result's `recorded`. */
  slotResult(slots: SlotSet, request: WindowRequest, held: number, take: boolean, now: number): WindowResult
  free(slots: readonly SlotRequest[]): number
  extend(slots: readonly SlotRequest[], ms: number): number
  onSlotFree(listener: (keys: readonly string[] | undefined) => void): void
}

/** The slots of `table`'s in-flight windows, timed by `clock`. */
export function createSlots(table: KeyTable, clock: () => number): Slots {
  const { entries } = table
  const slotsFreed = createWeakSignal<[readonly string[] | undefined]>()
  // The last slot id given: ids are the clock's time, made unique and increasing.
  let lastSlot = Number.NEGATIVE_INFINITY

  function slotResult(slots: SlotSet, request: WindowRequest, held: number, take: boolean, now: number): WindowResult {
    if (!take) return slots.result(now, request.limit, held, false)
    // The clock's time, unless a slot was given that id or a later one (the same instant, or a step back).
    const id = now > lastSlot ? now : lastSlot + 1
    lastSlot = id
    slots.take(id, now + request.windowMs)
    return { ...slots.result(now, request.limit, held, true), recorded: id }
  }

  /** The slot sets of the requests' keys (none for a key not held): a key of another kind fails the whole call. */
  function slotSetsOf(slots: readonly SlotRequest[]): (SlotSet | undefined)[] {
    return slots.map(({ key }) => {
      const entry = entries.get(key)
      if (entry !== undefined && entry.slots === undefined) throw otherAlgorithm(key, entry)
      return entry?.slots
    })
  }

  function free(slots: readonly SlotRequest[]): number {
    const now = clock()
    const sets = slotSetsOf(slots)
    const keys = new Set<string>()
    let count = 0
    for (const [i, { key, slot }] of slots.entries()) {
      if (!sets[i]?.free(slot, now)) continue
      count++
      keys.add(key)
    }
    if (keys.size > 0) {
      const freed = [...keys]
      // Heard after this call returns, never inside it.
      queueMicrotask(() => slotsFreed.emit(freed))
    }
    return count
  }

  function extend(slots: readonly SlotRequest[], ms: number): number {
    const now = clock()
    const sets = slotSetsOf(slots)
    let count = 0
    for (const [i, { slot }] of slots.entries()) if (sets[i]?.extend(slot, now + ms, now)) count++
    return count
  }

  return { slotResult, free, extend, onSlotFree: slotsFreed.add }
}
