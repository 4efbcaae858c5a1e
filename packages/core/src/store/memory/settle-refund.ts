// The memory store's settles and refunds of an admission, each applied once per id through a marker.
import type { RefundRequest, SettleRequest, StoreRefund, StoreSettle } from '../store.js'
import { type KeyTable, otherAlgorithm } from './key-table.js'

export interface SettleRefund {
  settle(requests: readonly SettleRequest[], id: string): StoreSettle
  refund(requests: readonly RefundRequest[], units: number, id: string): StoreRefund
  /** Drops the markers whose admissions' units can no longer count. */
  dropEnded(now: number): void
}

/** Settles and refunds in `table`'s windows, timed by `clock`. */
export function createSettleRefund(table: KeyTable, clock: () => number): SettleRefund {
  const { entries } = table
  // Admissions settled or refunded, by id (lua/sliding-log.lua's markers): until when (clock ms) a settle or refund
  // sent again is answered as applied (past it, none of its units could count), and what the settle moved in each
  // window (none once refunded). Ended ones are dropped by the sweep.
  const markers = new Map<string, { readonly until: number; readonly moved?: readonly number[] }>()

  function dropEnded(now: number): void {
    for (const [id, { until }] of markers) if (until <= now) markers.delete(id)
  }

  /**
   * lua/sliding-log.lua's settle: every window read before any is written; a delta applied at the entry's time in
   * each window that still holds the entry, once per id.
   */
  function settle(requests: readonly SettleRequest[], id: string): StoreSettle {
    const now = clock()
    // A key of another kind fails the call, as a Redis key of another type does.
    const logs = requests.map(({ key }) => {
      const entry = entries.get(key)
      if (entry !== undefined && entry.log === undefined) throw otherAlgorithm(key, entry)
      return entry?.log
    })
    // Each log's entries that have left the window dropped first, so that `has` finds live entries only.
    const usedNow = () => requests.map(({ windowMs }, i) => logs[i]?.used(now, windowMs) ?? 0)
    const before = usedNow()
    const marker = markerOf(id, now)
    if (marker) return { outcome: marker.moved ? 'already-settled' : 'refunded', used: before }
    const holding = requests.map(({ recorded }, i) => logs[i]?.has(recorded) === true)
    if (requests.some(({ recorded }, i) => holding[i] && logs[i]?.tooDeep(recorded))) {
      return { outcome: 'too-deep', used: before }
    }
    if (!holding.includes(true)) return { outcome: 'expired', used: before }
    let until = now
    const moved = requests.map(({ recorded, windowMs, delta }, i) => {
      until = Math.max(until, recorded + windowMs)
      return holding[i] ? (logs[i]?.adjust(recorded, delta) ?? 0) : 0
    })
    markers.set(id, { until, moved })
    return { outcome: 'settled', used: usedNow() }
  }

  /** The marker of an admission settled or refunded, while its units could count. */
  const markerOf = (id: string, now: number) => {
    const marker = markers.get(id)
    return marker !== undefined && marker.until > now ? marker : undefined
  }

  function refund(requests: readonly RefundRequest[], units: number, id: string): StoreRefund {
    const now = clock()
    const marker = markerOf(id, now)
    if (marker && !marker.moved) return { units: 0, outcome: 'already-refunded' }
    const live = (r: RefundRequest) => r.recorded > now - r.windowMs
    if (requests.some((r) => live(r) && entries.get(r.key)?.log?.tooDeep(r.recorded))) {
      return { units: 0, outcome: 'too-deep' }
    }
    let most = 0
    let until = 0
    for (const [i, request] of requests.entries()) {
      const { key, windowMs, buckets, recorded } = request
      const entry = entries.get(key)
      // The admission's units, and what its settle moved (the marker says), never less than none.
      const count = Math.max(0, (request.units ?? units) + (marker?.moved?.[i] ?? 0))
      let removed = 0
      if (entry?.log && live(request)) removed = entry.log.remove(recorded, count)
      else if (entry?.counter && buckets !== undefined) {
        removed = entry.counter.remove(now, recorded, count, windowMs, buckets)
      }
      most = Math.max(most, removed)
      // Past any unit's exit, a bucket's included (a bucket is at most a window wide).
      until = Math.max(until, recorded + (buckets === undefined ? 1 : 2) * windowMs)
    }
    if (most === 0) return { units: 0, outcome: 'expired' }
    markers.set(id, { until })
    return { units: most, outcome: 'refunded' }
  }

  return { settle, refund, dropEnded }
}
