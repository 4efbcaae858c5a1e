import type { Redis } from 'ioredis'
import { createScriptRunner } from '../../packages/core/src/store/script-runner.js'
import { slidingLogScript } from '../../packages/core/src/store/scripts.generated.js'
import {
  leaseCall,
  readSlidingLog,
  releaseCall,
  setDeadline,
  windowsCall,
} from '../../packages/core/src/store/sliding-log-call.js'

/**
 * lua/sliding-log.lua's binary argument from a readable list: op, units, deadline (server µs, 0 for none), then
 * per key limit, window (ms) and flags ('0', a block in ms, either after an 's' for a shadow window), and for a
 * lease min, waitFor, ttl (ms); for a release ('r'), per key the time recorded (µs) and the window (ms).
 */
export function textCall([op, units, deadline, ...rest]: readonly (string | number)[]): Buffer {
  const n = (value: string | number | undefined) => Number(value)
  const triples = []
  for (let i = 0; i + 2 < rest.length; i += 3) {
    const flags = String(rest[i + 2])
    const shadow = flags.startsWith('s')
    triples.push({
      limit: n(rest[i]),
      windowMs: n(rest[i + 1]),
      blockMs: n(shadow ? flags.slice(1) : flags),
      shadow,
    })
  }
  let bytes: Buffer
  if (op === 'l') {
    bytes = leaseCall(n(units), triples[0] as NonNullable<(typeof triples)[0]>, {
      min: n(rest[3]),
      waitFor: n(rest[4]),
      ttlMs: n(rest[5]),
    })
  } else if (op === 'r') {
    const entries = []
    for (let i = 0; i + 1 < rest.length; i += 2) entries.push({ recordedUs: n(rest[i]), windowMs: n(rest[i + 1]) })
    bytes = releaseCall(n(units), entries)
  } else if (op === 'c' || op === 'p' || op === 'z') {
    bytes = windowsCall(op, n(units), triples)
  } else {
    throw new Error(`textCall: unknown op ${String(op)}`)
  }
  setDeadline(bytes, n(deadline))
  return bytes
}

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
  const args = textCall([mode === 'consume' ? 'c' : 'p', cost, deadlineUs, limit, windowMs, '0'])
  const reply = readSlidingLog(await createScriptRunner(redis).runBuffer(slidingLogScript, [key], [args]), 1)
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
