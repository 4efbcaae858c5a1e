// Memory part: Redis bytes per key for each algorithm at several limits, and what the bucketed algorithm's
// bounded memory costs in admissions against the sliding log on the same schedule.
import { memoryStore, redisStore, type WindowRequest } from '@fleetlimit/core'
import { Redis } from 'ioredis'
import { startRedisServer } from '../test/support/redis-server.js'
import type { PartResult } from './run.js'

const LIMITS = [100, 10_000, 100_000]
const WINDOW_MS = 600

/** Fills one key to its limit with admissions spread over the whole window, and asks Redis its size. */
async function bytesPerKey(redis: Redis, limit: number, buckets: number | undefined): Promise<number> {
  const prefix = `bench-mem-${limit}-${buckets ?? 'log'}`
  const store = redisStore(redis, { prefix })
  const steps = 60
  for (let i = 0; i < steps; i++) {
    const cost = Math.floor(limit / steps) + (i < limit % steps ? 1 : 0)
    if (cost > 0) await store.consume([{ key: 'k', limit, windowMs: WINDOW_MS, cost, ...(buckets && { buckets }) }])
    await new Promise((resolve) => setTimeout(resolve, WINDOW_MS / steps - 2))
  }
  return Number(await redis.memory('USAGE', `${prefix}:k`, 'SAMPLES', '0'))
}

/** Admissions of each algorithm on one schedule: a steady 3x overload for 20 windows (memory stores, exact clock). */
async function underAdmission(buckets: number) {
  const limit = 100
  const windowMs = 1_000
  let now = 0
  const log = memoryStore({ clock: () => now })
  const bucketed = memoryStore({ clock: () => now })
  let admittedLog = 0
  let admittedBucketed = 0
  const request: WindowRequest = { key: 'k', limit, windowMs, cost: 1 }
  for (let t = 0; t < 20 * windowMs; t += windowMs / (3 * limit)) {
    now = t
    if ((await log.consume([request]))[0]?.allowed) admittedLog++
    if ((await bucketed.consume([{ ...request, buckets }]))[0]?.allowed) admittedBucketed++
  }
  return { buckets, admittedLog, admittedBucketed, ratio: admittedBucketed / admittedLog }
}

export async function memory(): Promise<PartResult> {
  const server = await startRedisServer()
  const redis = new Redis(server.url)
  const rows: { limit: number; slidingLogBytes: number; bucketedBytes: number }[] = []
  try {
    for (const limit of LIMITS) {
      rows.push({
        limit,
        slidingLogBytes: await bytesPerKey(redis, limit, undefined),
        bucketedBytes: await bytesPerKey(redis, limit, 60),
      })
    }
  } finally {
    redis.disconnect()
    await server.stop()
  }
  const admission = [await underAdmission(60), await underAdmission(10)]
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`
  const markdown = [
    `One key filled to its limit, admissions spread over a ${WINDOW_MS} ms window; \`MEMORY USAGE key SAMPLES 0\`.`,
    '',
    '| limit per window | sliding-log | bucketed (60 buckets) |',
    '|---|---|---|',
    ...rows.map((r) => `| ${r.limit.toLocaleString('en')} | ${kb(r.slidingLogBytes)} | ${kb(r.bucketedBytes)} |`),
    '',
    'Admissions on one schedule (3x the limit of 100 per 1 s, evenly spaced, 20 windows, in-memory models):',
    '',
    '| buckets | sliding-log admitted | bucketed admitted | bucketed / sliding-log |',
    '|---|---|---|---|',
    ...admission.map((a) => `| ${a.buckets} | ${a.admittedLog} | ${a.admittedBucketed} | ${a.ratio.toFixed(3)} |`),
    '',
  ].join('\n')
  return {
    title: 'Memory: bytes per key by algorithm, and the bucketed algorithm’s under-admission',
    markdown,
    data: { rows, admission },
  }
}
