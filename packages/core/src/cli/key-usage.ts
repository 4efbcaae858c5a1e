// A key's usage, read with the read-only script: units in its window or slots held, when it empties, a pause.
import { type Calendar, type Period, periodAt } from '../common/calendar.js'
import { MAX_LIMIT } from '../limiter/policy.js'
import type { WindowRequest, WindowResult } from '../store/store.js'
import type { PolicyFields } from './command-policy.js'
import type { PeriodRead, ReadWindow } from './read-window.js'

export interface Usage {
  /** Units in the window now; an in-flight policy's slots held. */
  readonly used: number
  /** Until the window holds no unit of the key; until the last slot ends. */
  readonly resetMs: number
  /** Until a pause (or block) ends; 0 when there is none (always, for slots). */
  readonly pausedMs: number
  /** An in-flight policy's: until the soonest slot ends (0 when none is held). */
  readonly nextSlotEndMs?: number
  /**
   * A calendar policy's: the period counted in (epoch ms), as its key holds it; when the key counts no current
   * period, the one the anchor names (undefined if none was given: `keys` knows no tenant's anchor).
   */
  readonly period?: Period | undefined
}

export const isEmpty = (usage: Usage) => usage.used === 0 && usage.resetMs === 0 && usage.pausedMs === 0

/** A key's usage, read under the largest limit: only a pause or a block then denies one unit. */
export async function usageOf(read: ReadWindow, window: WindowRequest): Promise<Usage> {
  const result = await read({ ...window, limit: MAX_LIMIT })
  const usage = {
    used: MAX_LIMIT - result.remaining,
    resetMs: result.resetMs,
    pausedMs: result.allowed ? 0 : result.retryAfterMs,
  }
  if (!window.slots) return usage
  // Under a limit of the slots held, one more waits for the soonest to end.
  const full = usage.used === 0 ? undefined : await read({ ...window, limit: usage.used })
  return { ...usage, nextSlotEndMs: full?.retryAfterMs ?? 0 }
}

/** The peek of one unit (or slot) of a policy's key (its limit given at each read). */
export const windowOf = (key: string, policy: PolicyFields): WindowRequest => ({
  key,
  limit: MAX_LIMIT,
  windowMs: policy.window,
  cost: 1,
  ...(policy.buckets !== undefined && { buckets: policy.buckets }),
  ...(policy.inFlight && { slots: true }),
})

/** The size of a calendar key's value: '>dddd', its period's start and end, its count and its hold (server µs). */
const PERIOD_BYTES = 32

/**
 * A calendar key's usage at the server's time of the read: its count while its period is current, else 0 (a new
 * period starts over), the wait to the period's end, and a hold. `calendar` names the current period when the key
 * counts none. Twin of lua/sliding-log.lua's period_open and period_answer.
 */
export function periodUsageOf(read: PeriodRead, calendar?: Calendar): Usage {
  const { value, nowUs } = read
  const now = nowUs / 1000
  const stored = value?.length === PERIOD_BYTES ? value : undefined
  const startUs = stored?.readDoubleBE(0) ?? 0
  const endUs = stored?.readDoubleBE(8) ?? 0
  const holdUs = stored?.readDoubleBE(24) ?? 0
  const pausedMs = holdUs > nowUs ? Math.ceil((holdUs - nowUs) / 1000) : 0
  if (stored && startUs <= nowUs && nowUs < endUs) {
    const used = stored.readDoubleBE(16)
    const period = { start: startUs / 1000, end: endUs / 1000 }
    return { used, resetMs: used > 0 ? Math.ceil((endUs - nowUs) / 1000) : 0, pausedMs, period }
  }
  return { used: 0, resetMs: 0, pausedMs, period: calendar && periodAt(calendar, now) }
}

/**
 * What a call of one unit would get under `limit` (a peek): room is used + 1 <= limit, a denial waits until the
 * period ends, and a hold denies until it ends (or longer). Twin of store/period-count.ts's result.
 */
export function nextOfPeriod(usage: Usage, limit: number, nowUs: number): WindowResult {
  const now = nowUs / 1000
  const room = usage.used + 1 <= limit
  const untilEnd = usage.period === undefined ? 0 : Math.ceil(usage.period.end - now)
  const retryAfterMs = Math.max(room ? 0 : untilEnd, usage.pausedMs)
  return {
    allowed: retryAfterMs === 0,
    remaining: Math.max(0, limit - usage.used),
    retryAfterMs,
    resetMs: usage.resetMs,
    now,
  }
}
