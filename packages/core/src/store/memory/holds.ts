// The memory store's held keys (blocked or paused): until when each is held, and the answer a hold gives.
import { StoreError } from '../../common/errors.js'
import type { WindowRequest, WindowResult } from '../store.js'

export interface Holds {
  /** Until when a key is held, or 0. */
  heldUntil(key: string, now: number): number
  /** Holds a key until `until` unless it is held longer; at most maxKeys keys are held. */
  holdKey(key: string, until: number, now: number): void
  /** A window denied for lack of room by a consume holds its key for its block. */
  blocked(request: WindowRequest, result: WindowResult, now: number): WindowResult
  /** Ends a key's hold (a reset). */
  end(key: string): void
  dropEnded(now: number): void
}

/**
 * A result on a held key: denied, with the wait until the hold ends (or until the cost fits, if later). A call
 * that decides (a consume, a lease) has nothing left while the hold denies every call; a peek reports the
 * window's own room, which tools read.
 */
export const held = (result: WindowResult, until: number, now: number, decides: boolean): WindowResult => ({
  ...result,
  allowed: false,
  remaining: decides ? 0 : result.remaining,
  retryAfterMs: Math.max(result.retryAfterMs, Math.ceil(until - now)),
})

/** The held keys of one store, at most `maxKeys` of them. */
export function createHolds(maxKeys: number): Holds {
  // Held keys: until when (clock ms). Apart from the windows, so that a sweep of idle windows keeps them; an ended
  // hold is dropped when next read, or by a sweep.
  const holds = new Map<string, number>()

  function dropEnded(now: number): void {
    for (const [key, until] of holds) if (until <= now) holds.delete(key)
  }

  function heldUntil(key: string, now: number): number {
    const until = holds.size === 0 ? undefined : holds.get(key)
    if (until === undefined) return 0
    if (until > now) return until
    holds.delete(key)
    return 0
  }

  function holdKey(key: string, until: number, now: number): void {
    const current = holds.get(key)
    if (current !== undefined && current >= until) return
    if (current === undefined && holds.size >= maxKeys) {
      dropEnded(now)
      if (holds.size >= maxKeys) {
        throw new StoreError(
          `memory store full: it holds maxKeys (${maxKeys}) held keys; raise maxKeys or use redisStore`,
        )
      }
    }
    holds.set(key, until)
  }

  function blocked(request: WindowRequest, result: WindowResult, now: number): WindowResult {
    const block = request.blockMs ?? 0
    if (block <= 0) return result
    holdKey(request.key, now + block, now)
    return { ...result, remaining: 0, retryAfterMs: Math.max(result.retryAfterMs, block) }
  }

  return { heldUntil, holdKey, blocked, end: (key) => void holds.delete(key), dropEnded }
}
