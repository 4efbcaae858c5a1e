// The memory store's sweep of idle keys: a slice of the key table per call, started at most once an interval.
import { type Entry, isIdle, type KeyTable } from './key-table.js'

/**
 * Keys the automatic sweep visits per call. A call adds at most a few keys, so the sweep outpaces them a
 * hundredfold, and no call pays for a million keys (about 70 µs per slice of live keys).
 */
export const SWEEP_VISITS_PER_CALL = 1_000

export interface Sweep {
  /** A slice of sweeping per call; a store near its cap sweeps without waiting for the interval. */
  housekeep(now: number, adding: number): void
  /** Drops every idle key at once, and starts the interval again; returns how many were dropped. */
  sweepAll(now: number): number
}

/**
 * The sweep of `table`, no timer: a call starts one at most every `sweepIntervalMs` (ms since `start`), calling
 * `onStart` then, and each call visits a slice of it.
 */
export function createSweep(
  table: KeyTable,
  options: {
    readonly maxKeys: number
    readonly sweepIntervalMs: number
    readonly start: number
    readonly onStart: (now: number) => void
  },
): Sweep {
  const { entries, drop } = table
  const { maxKeys, sweepIntervalMs, onStart } = options
  let lastSweep = options.start
  // The sweep in progress: a Map iterator resumes where it stopped, and sees keys added since.
  let cursor: Iterator<[string, Entry]> | undefined

  /** Visits up to `visits` keys of the sweep in progress; returns how many it dropped. */
  function sweepSome(now: number, visits: number): number {
    cursor ??= entries.entries()
    let dropped = 0
    for (let i = 0; i < visits; i++) {
      const next = cursor.next()
      if (next.done) {
        cursor = undefined
        break
      }
      const [key, entry] = next.value
      if (isIdle(entry, now)) {
        drop(key, entry)
        dropped++
      }
    }
    return dropped
  }

  function housekeep(now: number, adding: number): void {
    if (cursor === undefined && (now - lastSweep >= sweepIntervalMs || entries.size + adding > maxKeys)) {
      lastSweep = now
      onStart(now)
      cursor = entries.entries()
    }
    if (cursor !== undefined) sweepSome(now, SWEEP_VISITS_PER_CALL)
  }

  function sweepAll(now: number): number {
    lastSweep = now
    cursor = undefined
    return sweepSome(now, Number.POSITIVE_INFINITY)
  }

  return { housekeep, sweepAll }
}
