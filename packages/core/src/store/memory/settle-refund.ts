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
    const found = requests.map(({ key, period }) => {
      const entry = entries.get(key)
      if (entry !== undefined && (period ? entry.period : entry.log) === undefined) throw otherAlgorithm(key, entry)
      return entry
    })
    const logs = found.map((entry) => entry?.log)
    const periods = found.map((entry) => entry?.period)
    // Each log's entries that have left the window dropped first, so that `has` finds live entries only; a period's
    // count counts until its end.
    const usedNow = () =>
      requests.map(({ windowMs }, i) => {
        const period = periods[i]
        return period ? (now < period.end ? period.count : 0) : (logs[i]?.used(now, windowMs) ?? 0)
      })
    const before = usedNow()
    const marker = markerOf(id, now)
    if (marker) return { outcome: marker.moved ? 'already-settled' : 'refunded', used: before }
    const holding = requests.map(
      ({ recorded }, i) => periods[i]?.holds(recorded, now) === true || logs[i]?.has(recorded) === true,
    )
    if (requests.some(({ recorded }, i) => holding[i] && logs[i]?.tooDeep(recorded))) {
      return { outcome: 'too-deep', used: before }
    }
    if (!holding.includes(true)) return { outcome: 'expired', used: before }
    let until = now
    const moved = requests.map(({ recorded, windowMs, delta }, i) => {
      const period = periods[i]
      until = Math.max(until, period ? period.end : recorded + windowMs)
      if (!holding[i]) return 0
      return period ? period.adjust(recorded, delta, now) : (logs[i]?.adjust(recorded, delta) ?? 0)
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
    if (requests.some((r) => !r.period && live(r) && entries.get(r.key)?.log?.tooDeep(r.recorded))) {
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
      if (request.period) {
        // A period's count gives back units of its own period only; they count until it ends.
        removed = -(entry?.period?.adjust(recorded, -count, now) ?? 0)
        until = Math.max(until, entry?.period?.end ?? 0)
      } else if (entry?.log && live(request)) removed = entry.log.remove(recorded, count)
      else if (entry?.counter && buckets !== undefined) {
        removed = entry.counter.remove(now, recorded, count, windowMs, buckets)
      }
      most = Math.max(most, removed)
      // Past any unit's exit, a bucket's included (a bucket is at most a window wide).
      if (!request.period) until = Math.max(until, recorded + (buckets === undefined ? 1 : 2) * windowMs)
    }
    if (most === 0) return { units: 0, outcome: 'expired' }
    markers.set(id, { until })
    return { units: most, outcome: 'refunded' }
  }

  return { settle, refund, dropEnded }
}
