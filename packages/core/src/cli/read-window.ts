import type { Cluster, Redis } from 'ioredis'
import { type LearnedLimit, limitOf, parseNote } from '../limiter/learned-limits.js'
import { noteKey } from '../store/redis-notes.js'
import { numbers, toResult } from '../store/redis-store.js'
import { createScriptRunner } from '../store/script-runner.js'
import { bucketedReadOnlyScript, noteReadOnlyScript, slidingLogReadOnlyScript } from '../store/scripts.generated.js'
import { costWindowsCall, readSlidingLog } from '../store/sliding-log-call.js'
import type { WindowRequest, WindowResult } from '../store/store.js'

/** A peek at one window of the store's prefix: what a store's peek answers, read without writing. */
export type ReadWindow = (request: WindowRequest) => Promise<WindowResult>

/**
 * Peeks by each script's twin flagged no-writes (scripts.generated.ts), so that a read-only replica answers: a
 * store's peek shares its script run with consumes, and a replica refuses any script that may write.
 */
export function createReadWindow(client: Redis | Cluster, prefix: string): ReadWindow {
  const runner = createScriptRunner(client)
  return async (request) => {
    const key = `${prefix}:${request.key}`
    const { limit, windowMs, buckets, cost } = request
    if (buckets !== undefined) {
      const args = [limit, windowMs, buckets, cost, 'peek', 0, 0]
      const reply = numbers(await runner.run(bucketedReadOnlyScript, [key], args), bucketedReadOnlyScript)
      return toResult(reply, 0, reply[4] as number)
    }
    const reply = await runner.runBuffer(slidingLogReadOnlyScript, [key], [costWindowsCall('peek', [request])])
    const [result] = readSlidingLog(reply, 1).windows
    if (!result) throw new Error(`no answer for ${key}`)
    return result
  }
}

/** A calendar key's value (null when there is none) and the server's time in µs, when it was read. */
export interface PeriodRead {
  readonly value: Buffer | null
  readonly nowUs: number
}

/**
 * Reads a calendar period's key with GET and the server's clock with TIME, which a read-only replica answers: the
 * key's 32 bytes hold its period, count and hold (lua/sliding-log.lua's Periods). On a Cluster, TIME asks any node.
 */
export function createReadPeriod(client: Redis | Cluster, prefix: string) {
  return async (key: string): Promise<PeriodRead> => {
    const [value, [seconds, micros]] = await Promise.all([client.getBuffer(`${prefix}:${key}`), client.time()])
    return { value, nowUs: Number(seconds) * 1_000_000 + Number(micros) }
  }
}

/**
 * The limit limitedFetch's `adapt` learned for a window key (its note), read with the no-writes twin of
 * lua/note.lua; undefined when there is none, or none below `limit` (the policy's, when the command was given it).
 */
export async function readLearned(
  client: Redis | Cluster,
  prefix: string,
  key: string,
  windowMs: number,
  limit = Number.POSITIVE_INFINITY,
): Promise<LearnedLimit | undefined> {
  const reply = await createScriptRunner(client).run(noteReadOnlyScript, [noteKey(prefix, key)], ['r'])
  const [, value, now] = Array.isArray(reply) ? reply : []
  if (typeof value !== 'string' || typeof now !== 'number') return undefined
  return limitOf(parseNote(value), now, { window: windowMs, limit })
}
