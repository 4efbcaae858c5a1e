// Memory part: Redis bytes per key for each algorithm at several limits, the same for the popular Redis
// limiters, and what the bucketed algorithm's bounded memory costs in admissions against the sliding log on
// the same schedule.
import { memoryStore, redisStore, type Store } from '@fleetlimit/core'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { sleep } from '@fleetlimit/test-kit/sleep'
import { Redis } from 'ioredis'
import { PEERS, type Peer, type PeerId } from './peers.js'
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
    await sleep(WINDOW_MS / steps - 2)
  }
  return Number(await redis.memory('USAGE', `${prefix}:k`, 'SAMPLES', '0'))
}

/** Admits `limit` requests of one key through the store call of the peer's middleware. */
async function fill(peer: Peer, redis: Redis, limit: number): Promise<void> {
  const decide = await peer.createDecide(redis, { limit, windowMs: PEER_WINDOW_MS })
  await inChunks(limit, async () => {
    if (!(await decide('k'))) throw new Error(`${peer.name} denied a request under its limit`)
  })
}

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
  const request: Parameters<Store['consume']>[0][number] = { key: 'k', limit, windowMs, cost: 1 }
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
    limiter: PeerId
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
        await fill(peer, redis, limit)
        const { keys, bytes } = await keysAndBytes(redis)
        peers.push({
          limiter: peer.id,
          name: peer.name,
          algorithm: peer.algorithm,
          limit,
          keys,
          bytes,
          perAdmitted: bytes / limit,
        })
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
    {
      name: 'fleetlimit',
      algorithm: 'sliding log (a packed string: 9 B per call, here 60 calls)',
      bytes: 'slidingLogBytes' as const,
    },
    { name: 'fleetlimit', algorithm: 'bucketed, 60 buckets (HASH)', bytes: 'bucketedBytes' as const },
  ].map((ours) => ({
    ...ours,
    cells: peerLimits.map((limit) => rows.find((r) => r.limit === limit)?.[ours.bytes] ?? Number.NaN),
  }))
  const peerRows = PEERS.map((peer) => ({
    name: peer.name,
    algorithm: peer.algorithm,
    keys: (peers.find((p) => p.limiter === peer.id)?.keys ?? []).map((k) => `\`${k}\``).join(', '),
    cells: peerLimits.map(
      (limit) => peers.find((p) => p.limiter === peer.id && p.limit === limit)?.bytes ?? Number.NaN,
    ),
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
    "Beside the popular Redis limiters: one key filled to its limit through the store call each peer's middleware",
    `makes (a ${PEER_WINDOW_MS / 1000} s window, so nothing expires while it fills), then \`MEMORY USAGE\` of every key the`,
    "peer created (found with `SCAN` on the bench's own server); fleetlimit's figures are those above.",
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
