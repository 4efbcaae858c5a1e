import type { Redis } from 'ioredis'
import { readSlidingLog } from '../../packages/core/src/store/redis-store.js'
import { createScriptRunner } from '../../packages/core/src/store/script-runner.js'
import { slidingLogScript } from '../../packages/core/src/store/scripts.generated.js'

/** lua/sliding-log.lua's reply for one window, by name: allowed is 1, 0, or -1 past the deadline. */
export interface SlidingLogReply {
  allowed: number
  remaining: number
  retryAfterMs: number
  resetMs: number
  nowUs: number
  recordedUs: number
  units: number
}

/** One consume (or peek) of lua/sliding-log.lua on `key`. */
export async function callSlidingLog(
  redis: Redis,
  key: string,
  { limit, windowMs, cost = 1, mode = 'consume', deadlineUs = 0 }: SlidingLogCall,
): Promise<SlidingLogReply> {
  const args = [mode === 'consume' ? 'c' : 'p', cost, deadlineUs, limit, windowMs, '0']
  const reply = readSlidingLog(await createScriptRunner(redis).runBuffer(slidingLogScript, [key], args), 1)
  const window = reply.windows[0]
  const { remaining = 0, retryAfterMs = 0, resetMs = 0, recordedUs = 0 } = window ?? {}
  const allowed = reply.status === -1 ? -1 : window?.allowed ? 1 : 0
  return { allowed, remaining, retryAfterMs, resetMs, nowUs: reply.nowUs, recordedUs, units: reply.units }
}

export interface SlidingLogCall {
  readonly limit: number
  readonly windowMs: number
  readonly cost?: number
  readonly mode?: 'consume' | 'peek'
  readonly deadlineUs?: number
}
