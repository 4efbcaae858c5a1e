import type { WindowResult } from './store.js'

/**
 * One in-flight window's slots in process memory: each a lease by id that ends at a time (ms), live while its end
 * is after now. The twin of lua/sliding-log.lua's slot ZSET (member: the id, score: the end): the same answers on
 * whatever clock the caller passes. A window holds at most its limit of live slots, so a scan of them is short.
 */
export class SlotSet {
  /** Slot id to its end; ended ones are dropped when the set is next counted. */
  private readonly ends = new Map<number, number>()

  /** Live slots at `now`, ended ones dropped. */
  held(now: number): number {
    for (const [id, end] of this.ends) if (end <= now) this.ends.delete(id)
    return this.ends.size
  }

  /** Whether no slot is live at `now`: only then can the set be forgotten. */
  isEmpty(now: number): boolean {
    return this.held(now) === 0
  }

  /** Takes a slot until `end`. */
  take(id: number, end: number): void {
    this.ends.set(id, end)
  }

  /** Frees a live slot; whether it was held (a slot freed before, ended, or never taken is not). */
  free(id: number, now: number): boolean {
    const end = this.ends.get(id)
    if (end === undefined) return false
    this.ends.delete(id)
    return end > now
  }

  /** Keeps a live slot until `until` at least; whether it was held. */
  extend(id: number, until: number, now: number): boolean {
    const end = this.ends.get(id)
    if (end === undefined || end <= now) return false
    if (until > end) this.ends.set(id, until)
    return true
  }

  /**
   * The answer for one more slot at `now`, given `held` from the same instant; `taken` says whether this call's
   * slot was just taken. Denied: the wait until the soonest slot ends; the reset: until the last one does.
   */
  result(now: number, limit: number, held: number, taken: boolean): WindowResult {
    let soonest = Number.POSITIVE_INFINITY
    let latest = now
    for (const end of this.ends.values()) {
      if (end <= now) continue
      if (end < soonest) soonest = end
      if (end > latest) latest = end
    }
    const resetMs = Math.ceil(latest - now)
    if (held < limit) return { allowed: true, remaining: limit - held - (taken ? 1 : 0), retryAfterMs: 0, resetMs, now }
    return { allowed: false, remaining: 0, retryAfterMs: Math.ceil(soonest - now), resetMs, now }
  }
}
