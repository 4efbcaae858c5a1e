import type { Redis } from 'ioredis'
import { createScriptRunner } from '../../packages/core/src/store/script-runner.js'
import { slidingLogScript } from '../../packages/core/src/store/scripts.generated.js'

/** lua/sliding-log.lua's reply, by name. */
export interface SlidingLogReply {
  allowed: number
  remaining: number
  retryAfterMs: number
  resetMs: number
  nowUs: number
}

let members = 0

/** One call of lua/sliding-log.lua on `key`, with a member no other call uses. */
export async function callSlidingLog(
  redis: Redis,
  key: string,
  { limit, windowMs, cost = 1, mode = 'consume', deadlineUs = 0 }: SlidingLogCall,
): Promise<SlidingLogReply> {
  const reply = (await createScriptRunner(redis).run(
    slidingLogScript,
    [key],
    [limit, windowMs, cost, `m${members++}`, mode, deadlineUs],
  )) as number[]
  const [allowed, remaining, retryAfterMs, resetMs, nowUs] = reply as [number, number, number, number, number]
  return { allowed, remaining, retryAfterMs, resetMs, nowUs }
}

export interface SlidingLogCall {
  readonly limit: number
  readonly windowMs: number
  readonly cost?: number
  readonly mode?: 'consume' | 'peek'
  readonly deadlineUs?: number
}
