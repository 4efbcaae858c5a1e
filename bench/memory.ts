// Memory part: Redis bytes per key for each algorithm at several limits, the same for the popular Redis
// limiters, and what the bucketed algorithm's bounded memory costs in admissions against the sliding log on
// the same schedule.
import { fastifyRateLimit, type RateLimitPluginOptions } from '@fastify/rate-limit'
import { memoryStore, redisStore, type WindowRequest } from '@fleetlimit/core'
import type { Options as ExpressRateLimitOptions } from 'express-rate-limit'
import Fastify, { type FastifyPluginAsync } from 'fastify'
import { Redis } from 'ioredis'
import type { Context } from 'koa'
import koaRatelimit from 'koa-ratelimit'
import { type RedisReply, RedisStore } from 'rate-limit-redis'
import { RateLimiterRedis } from 'rate-limiter-flexible'
import { startRedisServer } from '../test/support/redis-server.js'
import type { PartResult } from './run.js'

const LIMITS = [100, 10_000, 100_000]
const WINDOW_MS = 600
/** The peers' window: long enough that nothing expires while a key is filled. */
const PEER_WINDOW_MS = 60_000
const PEER_LIMITS = [100, 10_000]

export interface MemoryOptions {
  /** The limits ours is measured at (the peers at those up to 10 000). Default 100, 10 000 and 100 000. */
  readonly limits?: readonly number[]
}

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

const PEERS = [
  {
    name: 'express-rate-limit 8 + rate-limit-redis 6',
    algorithm: 'fixed window (counter)',
    /** Admits `limit` requests of one key through the peer's own API. */
    async fill(redis: Redis, limit: number) {
      const store = new RedisStore({
        sendCommand: (command: string, ...args: string[]) => redis.call(command, ...args) as Promise<RedisReply>,
      })
      await store.init({ windowMs: PEER_WINDOW_MS } as ExpressRateLimitOptions)
      await inChunks(limit, () => store.increment('k'))
    },
  },
  {
    name: 'rate-limiter-flexible 11 RateLimiterRedis',
    algorithm: 'fixed window (counter)',
    async fill(redis: Redis, limit: number) {
      const limiter = new RateLimiterRedis({ storeClient: redis, points: limit, duration: PEER_WINDOW_MS / 1000 })
      await inChunks(limit, () => limiter.consume('k'))
    },
  },
  {
    name: '@fastify/rate-limit 11 (redis)',
    algorithm: 'fixed window (counter)',
    async fill(redis: Redis, limit: number) {
      const app = Fastify()
      // Its types name the workspace's hoisted fastify, not the pinned one this app runs on.
      const plugin = fastifyRateLimit as unknown as FastifyPluginAsync<RateLimitPluginOptions>
      await app.register(plugin, { redis, max: limit, timeWindow: PEER_WINDOW_MS, keyGenerator: () => 'k' })
      app.get('/', async () => 'ok')
      await inChunks(limit, async () => {
        const response = await app.inject('/')
        if (response.statusCode !== 200) throw new Error(`@fastify/rate-limit answered ${response.statusCode}`)
      })
      await app.close()
    },
  },
  {
    name: 'koa-ratelimit 6 (redis)',
    algorithm: 'sliding log (ZSET, one member per request)',
    async fill(redis: Redis, limit: number) {
      // @types/koa-ratelimit types `db` as an ioredis 4 client (@types/ioredis); the package takes any ioredis.
      const db = redis as unknown as koaRatelimit.MiddlewareOptions['db']
      const middleware = koaRatelimit({ driver: 'redis', db, duration: PEER_WINDOW_MS, max: limit, id: () => 'k' })
      // The middleware called directly, with the little of a Koa context it reads.
      await inChunks(limit, async () => {
        const ctx = { state: {}, set() {}, throw() {} } as unknown as Context
        let admitted = false
        await middleware(ctx, async () => {
          admitted = true
        })
        if (!admitted) throw new Error('koa-ratelimit denied a request under its limit')
      })
    },
  },
]

/** Runs `count` calls, a hundred at a time. */
async function inChunks(count: number, call: () => Promise<unknown>): Promise<void> {
  for (let done = 0; done < count; done += 100) {
    await Promise.all(Array.from({ length: Math.min(100, count - done) }, call))
  }
}

/** Every key in the (otherwise empty) server and the bytes of all of them. */
async function keysAndBytes(redis: Redis): Promise<{ keys: string[]; bytes: number }> {
  const keys: string[] = []
  let cursor = '0'
  do {
    const [next, batch] = await redis.scan(cursor, 'COUNT', 1_000)
    cursor = next
    keys.push(...batch)
  } while (cursor !== '0')
  let bytes = 0
  for (const key of keys) bytes += Number(await redis.memory('USAGE', key, 'SAMPLES', '0'))
  return { keys: keys.sort(), bytes }
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

export async function memory({ limits = LIMITS }: MemoryOptions = {}): Promise<PartResult> {
  const server = await startRedisServer()
  const redis = new Redis(server.url)
  const rows: { limit: number; slidingLogBytes: number; bucketedBytes: number }[] = []
  const peers: {
    name: string
    algorithm: string
    limit: number
    keys: string[]
    bytes: number
    perAdmitted: number
  }[] = []
  try {
    for (const limit of limits) {
      rows.push({
        limit,
        slidingLogBytes: await bytesPerKey(redis, limit, undefined),
        bucketedBytes: await bytesPerKey(redis, limit, 60),
      })
    }
    for (const peer of PEERS) {
      for (const limit of PEER_LIMITS.filter((l) => limits.includes(l))) {
        await redis.flushall()
        await peer.fill(redis, limit)
        const { keys, bytes } = await keysAndBytes(redis)
        peers.push({ name: peer.name, algorithm: peer.algorithm, limit, keys, bytes, perAdmitted: bytes / limit })
      }
    }
  } finally {
    redis.disconnect()
    await server.stop()
  }
  const admission = [await underAdmission(60), await underAdmission(10)]
  const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`
  const peerLimits = PEER_LIMITS.filter((l) => limits.includes(l))
  const ourRows = [
    { name: 'fleetlimit', algorithm: 'sliding log (ZSET, one member per unit)', bytes: 'slidingLogBytes' as const },
    { name: 'fleetlimit', algorithm: 'bucketed, 60 buckets (HASH)', bytes: 'bucketedBytes' as const },
  ].map((ours) => ({
    ...ours,
    cells: peerLimits.map((limit) => rows.find((r) => r.limit === limit)?.[ours.bytes] ?? Number.NaN),
  }))
  const peerRows = PEERS.map((peer) => ({
    name: peer.name,
    algorithm: peer.algorithm,
    keys: (peers.find((p) => p.name === peer.name)?.keys ?? []).map((k) => `\`${k}\``).join(', '),
    cells: peerLimits.map((limit) => peers.find((p) => p.name === peer.name && p.limit === limit)?.bytes ?? Number.NaN),
  }))
  const cells = (bytes: readonly number[]) =>
    bytes
      .map((b, i) => {
        const per = b / (peerLimits[i] as number)
        return `${b.toLocaleString('en')} B | ${per < 1 ? per.toPrecision(2) : per.toFixed(1)} B`
      })
      .join(' | ')
  const markdown = [
    `One key filled to its limit, admissions spread over a ${WINDOW_MS} ms window; \`MEMORY USAGE key SAMPLES 0\`.`,
    '',
    '| limit per window | sliding-log | bucketed (60 buckets) |',
    '|---|---|---|',
    ...rows.map((r) => `| ${r.limit.toLocaleString('en')} | ${kb(r.slidingLogBytes)} | ${kb(r.bucketedBytes)} |`),
    '',
    `Beside the popular Redis limiters: one key filled to its limit through each peer's own API (a ${PEER_WINDOW_MS / 1000} s window,`,
    'so nothing expires while it fills), then `MEMORY USAGE` of every key the peer created (found with `SCAN` on',
    "the bench's own server); fleetlimit's figures are those above.",
    '',
    `| limiter | algorithm | keys it made | ${peerLimits.map((l) => `bytes at ${l.toLocaleString('en')} | per admitted`).join(' | ')} |`,
    `|---|---|---|${peerLimits.map(() => '---|---|').join('')}`,
    ...ourRows.map((r) => `| ${r.name} | ${r.algorithm} | one per key | ${cells(r.cells)} |`),
    ...peerRows.map((r) => `| ${r.name} | ${r.algorithm} | ${r.keys} | ${cells(r.cells)} |`),
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
    data: { rows, peers, admission },
  }
}
