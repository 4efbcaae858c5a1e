import type { WindowResult } from './store.js'

/**
 * One key's window as sub-window counters, in process memory: the twin of lua/bucketed.lua, on
 * whatever clock the caller passes (ms; the arithmetic is in whole microseconds, as in the script).
 */
export class Bucketed {
  private readonly counts = new Map<number, number>()

  decide(nowMs: number, limit: number, windowMs: number, buckets: number, cost: number, record: boolean): WindowResult {
    const now = Math.floor(nowMs * 1000)
    const window = windowMs * 1000
    const width = Math.max(1, Math.floor(window / buckets))
    const live = this.live(now, window, width)
    const used = live.reduce((sum, [, n]) => sum + n, 0)
    const outMs = (index: number) => Math.ceil(((index + 1) * width + window - now) / 1000)
    const newest = live.at(-1)

    if (used + cost <= limit) {
      if (!record)
        return {
          allowed: true,
          remaining: limit - used,
          retryAfterMs: 0,
          resetMs: newest ? outMs(newest[0]) : 0,
          now: nowMs,
        }
      const current = Math.floor(now / width)
      this.counts.set(current, (this.counts.get(current) ?? 0) + cost)
      return { allowed: true, remaining: limit - used - cost, retryAfterMs: 0, resetMs: outMs(current), now: nowMs }
    }
    let freed = 0
    let retryAfterMs = 0
    for (const [index, n] of live) {
      freed += n
      if (used - freed + cost <= limit) {
        retryAfterMs = outMs(index)
        break
      }
    }
    const resetMs = outMs((newest as [number, number])[0])
    return { allowed: false, remaining: Math.max(0, limit - used), retryAfterMs, resetMs, now: nowMs }
  }

  /** Removes up to `units` from the bucket of `recordedMs`, if it still overlaps the window: a refund. */
  remove(nowMs: number, recordedMs: number, units: number, windowMs: number, buckets: number): number {
    const window = windowMs * 1000
    const width = Math.max(1, Math.floor(window / buckets))
    const index = Math.floor(Math.floor(recordedMs * 1000) / width)
    if (index < Math.floor((Math.floor(nowMs * 1000) - window) / width)) return 0
    const count = this.counts.get(index) ?? 0
    const removed = Math.min(units, count)
    if (removed > 0) this.counts.set(index, count - removed)
    return removed
  }

  /** No bucket overlaps the window ending at `now`: without allocating, as the sweep asks it of every key. */
  isEmpty(nowMs: number, windowMs: number, buckets: number): boolean {
    const window = windowMs * 1000
    const oldest = Math.floor((Math.floor(nowMs * 1000) - window) / Math.max(1, Math.floor(window / buckets)))
    for (const index of this.counts.keys()) if (index >= oldest) return false
    return true
  }

  /** The buckets overlapping the window ending at `now`, oldest first; older ones are dropped. */
  private live(now: number, window: number, width: number): [number, number][] {
    const oldest = Math.floor((now - window) / width)
    const live: [number, number][] = []
    for (const [index, n] of this.counts) {
      if (index < oldest) this.counts.delete(index)
      else live.push([index, n])
    }
    return live.sort((a, b) => a[0] - b[0])
  }
}
