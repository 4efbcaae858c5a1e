// The memory store's decisions: a consume or a peek of one window or several, as the Redis scripts decide them.
import { periodAt } from '../../common/calendar.js'
import { StoreError } from '../../common/errors.js'
import type { Bucketed } from '../bucketed.js'
import type { PeriodCount } from '../period-count.js'
import type { SlidingLog } from '../sliding-log.js'
import type { WindowRequest, WindowResult } from '../store.js'
import { type Holds, held } from './holds.js'
import { type Entry, type EntrySlot, isIdle, type KeyTable } from './key-table.js'
import type { Slots } from './slots.js'
import type { Sweep } from './sweep.js'

export interface Decisions {
  /** All the windows admit together, or none records anything: the contract of the multi-key script. */
  decide(requests: readonly WindowRequest[], record: boolean, now?: number): WindowResult[]
  /**
   * decide() for one sliding-log window, the common call, without the arrays and copies of the general case:
   * the same rules in the same order, so the model tests of one window hold for it.
   */
  decideLog(request: WindowRequest, record: boolean, now: number, slot?: EntrySlot): WindowResult
}

/**
 * A share window's result (lua/sliding-log.lua's share_answer): admitted unless held and the cost does not fit in
 * it; a denial waits until the hold ends or the cost fits, whichever is first (the hold's end for a cost over the
 * limit). It records without room too, so nothing is left then.
 */
function shareResult(
  request: WindowRequest,
  result: WindowResult,
  used: number,
  allowed: boolean,
  until: number,
  recorded: boolean,
  now: number,
): WindowResult {
  const { limit, cost } = request
  const remaining = Math.max(0, limit - used - (recorded ? cost : 0))
  if (allowed) return { allowed, remaining, retryAfterMs: 0, resetMs: result.resetMs, now }
  const hold = Math.ceil(until - now)
  const retryAfterMs = cost > limit ? hold : Math.min(hold, result.retryAfterMs)
  return { allowed, remaining, retryAfterMs, resetMs: result.resetMs, now }
}

/** Decisions on `table`'s windows: held keys deny, slot windows take slots, and each call sweeps a slice. */
export function createDecisions(
  table: KeyTable,
  holds: Holds,
  slots: Pick<Slots, 'slotResult'>,
  sweep: Pick<Sweep, 'housekeep'>,
  clock: () => number,
): Decisions {
  const { drop, logEntryOf, entriesOf } = table
  const { heldUntil, blocked } = holds
  const { slotResult } = slots
  const { housekeep } = sweep

  function decideLog(request: WindowRequest, record: boolean, now: number, slot?: EntrySlot): WindowResult {
    const entry = logEntryOf(request, record, slot)
    const log = entry.log as SlidingLog
    const used = log.used(now, request.windowMs)
    const room = used + request.cost <= request.limit
    const until = heldUntil(request.key, now)
    const recorded = record && room && until === 0
    const at = recorded ? log.add(now, request.cost) : undefined
    let result = log.result(now, request.limit, request.windowMs, request.cost, used, recorded, at)
    if (until) result = held(result, until, now, record)
    else if (record && !room) result = blocked(request, result, now)
    if (used === 0 && !recorded && log.isEmpty(now, request.windowMs) && !entry.dropped) drop(request.key, entry)
    return result
  }

  function decide(requests: readonly WindowRequest[], record: boolean, now = clock()): WindowResult[] {
    housekeep(now, requests.length)
    const [only] = requests
    if (requests.length === 1 && only?.buckets !== undefined) {
      const entry = entriesOf(requests, record)[0] as Entry
      const counter = entry.counter
      const until = heldUntil(only.key, now)
      let result = (counter as Bucketed).decide(
        now,
        only.limit,
        only.windowMs,
        only.buckets,
        only.cost,
        record && !until,
      )
      if (until) result = held(result, until, now, record)
      else if (record && !result.allowed) result = blocked(only, result, now)
      else if (record) result = { ...result, recorded: now }
      if (!result.allowed || !record) {
        if ((counter as Bucketed).isEmpty(now, only.windowMs, only.buckets) && !entry.dropped) drop(only.key, entry)
      }
      return [result]
    }
    if (
      requests.length === 1 &&
      only !== undefined &&
      only.slots !== true &&
      only.period === undefined &&
      only.share !== true
    )
      return [decideLog(only, record, now)]
    if (requests.some((request) => request.buckets !== undefined && request.slots !== true)) {
      throw new StoreError('a bucketed window is decided alone, not with other windows in one call')
    }
    const several = requests.length > 1
    // Each window with its own cost; a slot window asks for one slot, whatever the cost.
    const windows = entriesOf(requests, record).map((entry, i) => {
      const request = requests[i] as WindowRequest
      if (entry.slots) {
        const used = entry.slots.held(now)
        const room = used < request.limit
        return { request, entry, used, room, until: 0, allowed: room, period: undefined }
      }
      // A calendar window: the period that holds now, by this store's clock.
      const period = request.period && periodAt(request.period, now)
      const used = period
        ? (entry.period as PeriodCount).used(period)
        : (entry.log as SlidingLog).used(now, request.windowMs)
      const room = used + request.cost <= request.limit
      const until = heldUntil(request.key, now)
      // A share window denies only while held, and then only a cost that does not fit in it.
      const allowed = request.share ? until === 0 || room : room && until === 0
      return { request, entry, used, room, until, allowed, period }
    })
    // Shadow windows do not decide the call; each records what it would have admitted.
    const admitted = record && windows.every((w) => w.allowed || (several && w.request.shadow))
    const results = windows.map(({ request, entry, used, room, until, allowed, period }) => {
      const recorded = admitted && allowed
      if (entry.slots) return slotResult(entry.slots, request, used, recorded, now)
      let at: number | undefined
      let result: WindowResult
      if (period) {
        // Units in a period are stamped with their admission's time: a refund finds their period by it.
        if (recorded) (entry.period as PeriodCount).add(period, request.cost)
        at = recorded ? now : undefined
        result = (entry.period as PeriodCount).result(now, period, request.limit, request.cost, used, recorded)
      } else {
        const log = entry.log as SlidingLog
        at = recorded ? log.add(now, request.cost) : undefined
        result = log.result(now, request.limit, request.windowMs, request.cost, used, recorded)
        if (request.share) result = shareResult(request, result, used, allowed, until, recorded, now)
      }
      if (until && !request.share) return held(result, until, now, record)
      if (record && !room) return blocked(request, result, now)
      return at === undefined ? result : { ...result, recorded: at }
    })
    // A peek or a denial must not leave empty entries behind (a log with an emptied entry is not empty).
    for (const { request, entry, used, allowed } of windows) {
      if (used === 0 && !(admitted && allowed) && isIdle(entry, now) && !entry.dropped) drop(request.key, entry)
    }
    return results
  }

  return { decide, decideLog }
}
