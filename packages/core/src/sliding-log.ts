import type { WindowResult } from './store.js'

/**
 * One key's sliding-window log in process memory: the admitted units' times (ms), oldest first.
 * It decides exactly as lua/sliding-window.lua does, on whatever clock the caller passes.
 */
export class SlidingLog {
  private times: number[] = []
  private head = 0

  /** True when no unit of this log is inside the window ending at `now`. */
  isEmpty(now: number, windowMs: number): boolean {
    this.trim(now, windowMs)
    return this.head === this.times.length
  }

  /** Admits (and, when `record`, stores) `cost` units if they fit in the window ending at `now`. */
  decide(now: number, limit: number, windowMs: number, cost: number, record: boolean): WindowResult {
    this.trim(now, windowMs)
    const used = this.times.length - this.head
    if (used + cost <= limit) {
      if (!record) {
        const resetMs = used > 0 ? this.msUntilGone(this.times.length - 1, now, windowMs) : 0
        return { allowed: true, remaining: limit - used, retryAfterMs: 0, resetMs, now }
      }
      this.insert(now, cost)
      const resetMs = this.msUntilGone(this.times.length - 1, now, windowMs)
      return { allowed: true, remaining: limit - used - cost, retryAfterMs: 0, resetMs, now }
    }
    // The (used + cost - limit)-th oldest unit must leave before this cost fits.
    return {
      allowed: false,
      remaining: Math.max(0, limit - used),
      retryAfterMs: this.msUntilGone(this.head + used + cost - limit - 1, now, windowMs),
      resetMs: this.msUntilGone(this.times.length - 1, now, windowMs),
      now,
    }
  }

  private msUntilGone(index: number, now: number, windowMs: number): number {
    return Math.ceil((this.times[index] as number) + windowMs - now)
  }

  private trim(now: number, windowMs: number): void {
    const edge = now - windowMs
    const { times } = this
    while (this.head < times.length && (times[this.head] as number) <= edge) this.head++
    // Compact once the dead prefix dominates, so memory follows the live units.
    if (this.head > 64 && this.head * 2 > times.length) {
      this.times = times.slice(this.head)
      this.head = 0
    }
  }

  private insert(now: number, cost: number): void {
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
}
