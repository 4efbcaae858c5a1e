// The memory store's leases: units of a sliding-log window granted ahead for a caller to use, and returned.
import type { SlidingLog } from '../sliding-log.js'
import type { Lease, LeaseRequest, LeaseResult } from '../store.js'
import { type Holds, held } from './holds.js'
import type { Entry, KeyTable } from './key-table.js'
import type { Sweep } from './sweep.js'

export interface Leases {
  lease(request: LeaseRequest): LeaseResult
  release(key: string, lease: Lease, units: number): void
}

/** Leases on `table`'s sliding-log windows, denied on held keys, timed by `clock`. */
export function createLeases(
  table: KeyTable,
  holds: Pick<Holds, 'heldUntil'>,
  sweep: Pick<Sweep, 'housekeep'>,
  clock: () => number,
): Leases {
  const { entries, entriesOf, drop } = table
  const { heldUntil } = holds
  const { housekeep } = sweep

  /** lua/sliding-log.lua's lease: units recorded at the lease's expiry, so each use before it stays covered. */
  function lease(request: LeaseRequest): LeaseResult {
    const now = clock()
    housekeep(now, 1)
    const entry = entriesOf([request], true)[0] as Entry
    const log = entry.log as SlidingLog
    const used = log.used(now, request.windowMs)
    const available = request.limit - used
    const until = heldUntil(request.key, now)
    if (available >= request.min && !until) {
      const granted = Math.min(request.want, available)
      const score = log.add(now + request.ttlMs, granted)
      const { resetMs } = log.result(now, request.limit, request.windowMs, 0, used + granted, true)
      return {
        allowed: true,
        remaining: available - granted,
        retryAfterMs: 0,
        resetMs,
        now,
        lease: { windowMs: request.windowMs, score, granted, recorded: score },
      }
    }
    const result = log.result(now, request.limit, request.windowMs, request.waitFor, used, false)
    const denied = until ? held(result, until, now, true) : result
    if (used === 0 && log.isEmpty(now, request.windowMs)) drop(request.key, entry)
    return { ...denied, allowed: false, lease: { windowMs: request.windowMs, score: 0, granted: 0, recorded: 0 } }
  }

  function release(key: string, { score }: Lease, units: number): void {
    // A key now of the other algorithm holds none of the lease's units: nothing to return.
    const log = entries.get(key)?.log
    if (log && !log.tooDeep(score)) log.remove(score, units)
  }

  return { lease, release }
}
