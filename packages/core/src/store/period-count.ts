import type { Period } from '../common/calendar.js'
import type { WindowResult } from './store.js'

/**
 * One key's calendar period in process memory: the period it counts in and the units admitted there; a new period
 * starts over at 0. lua/sliding-log.lua's period windows are its twin (the same answers, times in the store's clock).
 */
export class PeriodCount {
  start = 0
  end = 0
  count = 0

  /** Units admitted in `period` (none when the count is of another period). */
  used(period: Period): number {
    return this.start === period.start && this.end === period.end ? this.count : 0
  }

  /** Records `units` in `period`, starting it over if the count is of another. */
  add(period: Period, units: number): void {
    if (this.start !== period.start || this.end !== period.end) {
      this.start = period.start
      this.end = period.end
      this.count = 0
    }
    this.count += units
  }

  /**
   * The answer for `cost` units, `used` being the count before the call and `recorded` whether it was added: a
   * denial waits, and the reset counts, until the next period starts.
   */
  result(now: number, period: Period, limit: number, cost: number, used: number, recorded: boolean): WindowResult {
    const untilEnd = Math.ceil(period.end - now)
    const after = recorded ? used + cost : used
    const room = used + cost <= limit
    return {
      allowed: room,
      remaining: Math.max(0, limit - after),
      retryAfterMs: room ? 0 : untilEnd,
      resetMs: after > 0 ? untilEnd : 0,
      now,
    }
  }

  /** Whether nothing counts any more: no unit, or its period has ended. */
  isEmpty(now: number): boolean {
    return this.count === 0 || now >= this.end
  }

  /** Whether units recorded at `recorded` (a result's `recorded`) count here still: their period is this count's. */
  holds(recorded: number, now: number): boolean {
    return this.start <= recorded && recorded < this.end && now < this.end
  }

  /** Moves the count by `delta` for units recorded at `recorded` (taking at most what it holds); the units moved. */
  adjust(recorded: number, delta: number, now: number): number {
    if (!this.holds(recorded, now)) return 0
    const moved = delta < 0 ? -Math.min(-delta, this.count) : delta
    this.count += moved
    return moved
  }
}
