import type { WindowResult } from './store.js'

/**
 * One key's sliding-window log in process memory: the admitted units' times (ms), oldest first.
 * It decides exactly as lua/sliding-window.lua does, on whatever clock the caller passes.
 */
export class SlidingLog {
  private times: number[] = []
  private head = 0

  /** Units inside the window ending at `now` (older ones are dropped). */
  used(now: number, windowMs: number): number {
    const edge = now - windowMs
    const { times } = this
    while (this.head < times.length && (times[this.head] as number) <= edge) this.head++
    // Compact once the dead prefix dominates, so memory follows the live units.
    if (this.head > 64 && this.head * 2 > times.length) {
      this.times = times.slice(this.head)
      this.head = 0
    }
    return this.times.length - this.head
  }

  /** Records `cost` units at `now`. */
  add(now: number, cost: number): void {
    const { times } = this
    let at = times.length
    // A clock that stepped back (an injected one) still keeps the log sorted.
    if (at > this.head && (times[at - 1] as number) > now) {
      let low = this.head
      while (low < at) {
        const mid = (low + at) >>> 1
        if ((times[mid] as number) <= now) low = mid + 1
        else at = mid
      }
    }
    const later = times.splice(at)
    for (let i = 0; i < cost; i++) times.push(now)
    for (const time of later) times.push(time)
  }

  /** Removes up to `count` units recorded at exactly `time` (unused leased units, which are interchangeable). */
  remove(time: number, count: number): number {
    const { times } = this
    let first = this.head
    let last = times.length
    while (first < last) {
      const mid = (first + last) >>> 1
      if ((times[mid] as number) < time) first = mid + 1
      else last = mid
    }
    let end = first
    while (end < times.length && times[end] === time && end - first < count) end++
    times.splice(first, end - first)
    return end - first
  }

  /**
   * The answer for `cost` units at `now`, given `used` from the same instant; `recorded` says whether this
   * call's units were just added. A cost that does not fit gets the wait until the
   * (used + cost - limit)-th oldest unit leaves.
   */
  result(now: number, limit: number, windowMs: number, cost: number, used: number, recorded: boolean): WindowResult {
    const newest = this.times.length - 1
    const resetMs = newest >= this.head ? this.msUntilGone(newest, now, windowMs) : 0
    if (used + cost <= limit) {
      return { allowed: true, remaining: limit - used - (recorded ? cost : 0), retryAfterMs: 0, resetMs, now }
    }
    const retryAfterMs = this.msUntilGone(this.head + used + cost - limit - 1, now, windowMs)
    return { allowed: false, remaining: Math.max(0, limit - used), retryAfterMs, resetMs, now }
  }

  private msUntilGone(index: number, now: number, windowMs: number): number {
    return Math.ceil((this.times[index] as number) + windowMs - now)
  }
}
