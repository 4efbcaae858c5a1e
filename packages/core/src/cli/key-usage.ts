// A key's usage, read with the read-only script: units in its window or slots held, when it empties, a pause.
import { MAX_LIMIT } from '../limiter/policy.js'
import type { WindowRequest } from '../store/store.js'
import type { PolicyFields } from './command-policy.js'
import type { ReadWindow } from './read-window.js'

export interface Usage {
  /** Units in the window now; an in-flight policy's slots held. */
  readonly used: number
  /** Until the window holds no unit of the key; until the last slot ends. */
  readonly resetMs: number
  /** Until a pause (or block) ends; 0 when there is none (always, for slots). */
  readonly pausedMs: number
  /** An in-flight policy's: until the soonest slot ends (0 when none is held). */
  readonly nextSlotEndMs?: number
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
