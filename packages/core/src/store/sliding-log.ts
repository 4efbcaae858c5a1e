import { slidingLogLayout } from './sliding-log-layout.generated.js'
import type { WindowResult } from './store.js'

// Above this many units dropped from the front, the running totals are rebased, so they stay exact
// integers in a double whatever the traffic (a window holds at most a limit, 1e9, on top of it).
const REBASE_AT = 2 ** 50

/**
 * A log is compacted once at least this many entries have left the window and they outnumber the live ones:
 * lua/sliding-log.lua's COMPACT_AT, read from the script. Memory follows the live entries, and a compaction is rare.
 */
export const COMPACT_AT: number = slidingLogLayout.compactAt

/**
 * A refund rewrites the running total of every entry after the one it changes: with more entries after it than
 * this, it changes nothing and says so ('too-deep'): lua/sliding-log.lua's MAX_RELEASE_TAIL, read from the script.
 */
export const MAX_REFUND_TAIL: number = slidingLogLayout.maxReleaseTail

/**
 * One key's sliding-window log in process memory, run-length: one entry per admission time (ms), oldest
 * first, with the running total of units through it. It decides exactly as lua/sliding-log.lua does,
 * on whatever clock the caller passes, with work and memory per call that do not grow with the cost.
 */
export class SlidingLog {
  /**
   * Entry i is `[2i]` its time and `[2i + 1]` the units of entries 0..i, so the n-th oldest unit is a binary
   * search away. Times ascend, one entry per distinct time. One array, not two: half the growth slack per key.
   */
  private log: number[] = []
  /** Entries before it have left the window. */
  private head = 0

  /** Units inside the window ending at `now` (older ones are dropped). */
  used(now: number, windowMs: number): number {
    const edge = now - windowMs
    const count = this.count()
    while (this.head < count && this.time(this.head) <= edge) this.head++
    // Compact once the dead prefix dominates, so memory follows the live entries.
    if ((this.head >= COMPACT_AT && this.head * 2 > count) || this.base() > REBASE_AT) this.compact()
    return this.end(this.count() - 1) - this.base()
  }

  /**
   * Whether no entry is inside the window ending at `now`, emptied ones included: only then can the log be
   * forgotten, since an emptied entry still bounds the reset and the time of later records.
   */
  isEmpty(now: number, windowMs: number): boolean {
    this.used(now, windowMs)
    return this.count() === this.head
  }

  /**
   * Records `units` at `time`, or at the newest entry's time if that is later (a lease's, in the future, or a
   * clock that stepped back), as lua/sliding-log.lua does: entries stay in time order, and a unit never counts
   * for less than a window from its admission. Returns the time the units were recorded at.
   */
  add(time: number, units: number): number {
    const count = this.count()
    if (count === this.head) {
      // Nothing live: start over in an exact-size array (a first push would reserve 19 slots).
      this.log = [time, units]
      this.head = 0
      return time
    }
    const newest = this.time(count - 1)
    if (newest >= time) {
      // The same instant as the newest entry, or earlier: its units are interchangeable, so they merge.
      this.log[2 * count - 1] = this.end(count - 1) + units
      return newest
    }
    this.log.push(time, this.end(count - 1) + units)
    return time
  }

  /** Whether the live entry recorded at exactly `time` has more than MAX_REFUND_TAIL entries after it. */
  tooDeep(time: number): boolean {
    const at = this.firstAfter(time) - 1
    return at >= this.head && this.time(at) === time && this.count() - 1 - at > MAX_REFUND_TAIL
  }

  /** Whether a live entry was recorded at exactly `time` (an emptied one included). */
  has(time: number): boolean {
    const at = this.firstAfter(time) - 1
    return at >= this.head && this.time(at) === time
  }

  /** Removes up to `count` units recorded at exactly `time` (unused leased units, which are interchangeable). */
  remove(time: number, count: number): number {
    return 0 - this.adjust(time, -count)
  }

  /**
   * Changes the units of the live entry recorded at exactly `time` by `delta`, taking at most the units it holds;
   * returns the change made (0 without such an entry). A settle's and a refund's one rewrite of the tail, as in
   * lua/sliding-log.lua: the entry stays, emptied or not (it still bounds the reset and later records), and every
   * later running total moves with it.
   */
  adjust(time: number, delta: number): number {
    const at = this.firstAfter(time) - 1
    if (at < this.head || this.time(at) !== time) return 0
    const change = Math.max(delta, this.end(at - 1) - this.end(at))
    if (change === 0) return 0
    for (let i = at; i < this.count(); i++) this.log[2 * i + 1] = this.end(i) + change
    return change
  }

  /**
   * The answer for `cost` units at `now`, given `used` from the same instant; `recorded` says whether this
   * call's units were just added, and `at` (when given) the time add() recorded them at, which the answer then
   * carries as its `recorded`. A cost that does not fit gets the wait until the (used + cost - limit)-th oldest
   * unit leaves.
   */
  result(
    now: number,
    limit: number,
    windowMs: number,
    cost: number,
    used: number,
    recorded: boolean,
    at?: number,
  ): WindowResult {
    const newest = this.count() - 1
    const resetMs = used + (recorded ? cost : 0) > 0 ? this.msUntilGone(newest, now, windowMs) : 0
    if (used + cost <= limit) {
      const remaining = limit - used - (recorded ? cost : 0)
      // Made with its stamp rather than given it after: one shape, and no copy.
      if (at !== undefined) return { allowed: true, remaining, retryAfterMs: 0, resetMs, now, recorded: at }
      return { allowed: true, remaining, retryAfterMs: 0, resetMs, now }
    }
    const retryAfterMs =
      newest >= this.head ? this.msUntilGone(this.entryOfUnit(used + cost - limit), now, windowMs) : 0
    return { allowed: false, remaining: Math.max(0, limit - used), retryAfterMs, resetMs, now }
  }

  /** The entry that holds the n-th oldest live unit (from 1); the newest for a cost above all it holds. */
  private entryOfUnit(n: number): number {
    const target = this.base() + n
    let low = this.head
    let high = this.count() - 1
    while (low < high) {
      const mid = (low + high) >>> 1
      if (this.end(mid) >= target) high = mid
      else low = mid + 1
    }
    return low
  }

  /** The first live entry later than `time` (the entry count when none is). */
  private firstAfter(time: number): number {
    let low = this.head
    let high = this.count()
    while (low < high) {
      const mid = (low + high) >>> 1
      if (this.time(mid) <= time) low = mid + 1
      else high = mid
    }
    return low
  }

  private count(): number {
    return this.log.length >>> 1
  }

  private time(i: number): number {
    return this.log[2 * i] as number
  }

  /** Units of entries 0..i; 0 for i = -1. */
  private end(i: number): number {
    return i < 0 ? 0 : (this.log[2 * i + 1] as number)
  }

  /** Units dropped from the front since the last compaction. */
  private base(): number {
    return this.end(this.head - 1)
  }

  private compact(): void {
    const base = this.base()
    this.log = this.log.slice(2 * this.head)
    for (let i = 1; i < this.log.length; i += 2) this.log[i] = (this.log[i] as number) - base
    this.head = 0
  }

  private msUntilGone(index: number, now: number, windowMs: number): number {
    return Math.ceil(this.time(index) + windowMs - now)
  }
}
