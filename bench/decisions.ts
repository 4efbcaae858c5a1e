// Decisions part: decisions per second from one Node process, calling each limiter's Redis operation
// directly (no HTTP), with 1 and with 100 decisions in flight; beside them, EVALSHA of our sliding-log script
// sent as redis-benchmark sends it (resp-load.ts): the server's own ceiling on this machine.
import { once } from 'node:events'
import { createRateLimiter, type LocalOptions, redisStore } from '@fleetlimit/core'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { GlideClient } from '@valkey/valkey-glide'
import { Redis } from 'ioredis'
import { createClient } from 'redis'
// Internal to core (not in its exports), so by path: the script and its argument, as redisStore sends them.
import { slidingLogScript } from '../packages/core/src/store/scripts.generated.js'
import { windowsCall } from '../packages/core/src/store/sliding-log-call.js'
import { limiterName, PEERS } from './peers.js'
import { encodeCommand, respLoad } from './resp-load.js'
import { type RoundTripRow, roundTrip, roundTripMarkdown } from './round-trip.js'
import type { PartResult } from './run.js'

export interface DecisionsOptions {
  /** Unmeasured decisions first, per cell. */
  readonly warmMs?: number
  /** Measured time per cell. */
  readonly durationMs?: number
  /** redis-benchmark requests, unpipelined and 16-deep pipelines. */
  readonly benchmarkRequests?: readonly [number, number]
}

const FULL = { warmMs: 500, durationMs: 2_000, benchmarkRequests: [100_000, 400_000] as const }
const IN_FLIGHT = [1, 100] as const
// Far above what any cell reaches: every decision is admitted, on one key per cell.
const LIMIT = 1_000_000_000
const WINDOW_MS = 60_000

/** One decision: resolves true when admitted. */
type Decide = () => Promise<boolean>

interface Subject {
  readonly limiter: string
  readonly call: string
  /** 'admitted' (one key, a huge limit) unless said otherwise. */
  readonly load?: 'denied'
  /** The client fleetlimit is given, made with its library's defaults: ioredis unless said otherwise. */
  readonly client?: 'node-redis' | 'GLIDE'
  setup(client: Redis): Promise<Decide>
}

/** A store client of another library on the server at `url`, and how to close it. */
async function otherClient(kind: 'node-redis' | 'GLIDE', url: string) {
  if (kind === 'GLIDE') {
    const { hostname, port } = new URL(url)
    const client = await GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port) }] })
    return { client, close: () => client.close() }
  }
  const client = createClient({ url })
  await client.connect()
  return { client, close: () => client.destroy() }
}

/** limiter.consume with `local: false` on a client of another library. */
const storeOnlyOn = (kind: 'node-redis' | 'GLIDE'): Subject => ({
  limiter: `fleetlimit, store only, ${kind}`,
  call: 'limiter.consume, local: false',
  client: kind,
  setup: async () => {
    throw new Error(`${kind}: set up through its own client`)
  },
})

const fleetlimit =
  (local: LocalOptions | false, limit = LIMIT, windowMs = WINDOW_MS) =>
  async (client: Redis) => {
    const limiter = createRateLimiter({ store: redisStore(client), limit, window: `${windowMs}ms`, local })
    return async () => (await limiter.consume('bench')).allowed
  }

const SUBJECTS: readonly Subject[] = [
  ...PEERS.map(
    (peer): Subject => ({
      limiter: peer.id,
      call: peer.call,
      async setup(client) {
        const decide = await peer.createDecide(client, { limit: LIMIT, windowMs: WINDOW_MS })
        return () => decide('bench')
      },
    }),
  ),
  { limiter: 'fleetlimit, store only', call: 'limiter.consume, local: false', setup: fleetlimit(false) },
  storeOnlyOn('node-redis'),
  storeOnlyOn('GLIDE'),
  {
    limiter: 'fleetlimit, the store alone',
    call: 'redisStore(client).consume',
    async setup(client) {
      const store = redisStore(client)
      const request = { key: 'bench', limit: LIMIT, windowMs: WINDOW_MS, cost: 1 }
      return async () => (await store.consume([request]))[0]?.allowed ?? false
    },
  },
  { limiter: 'fleetlimit, deny cache (default local tier)', call: 'limiter.consume', setup: fleetlimit({}) },
  {
    limiter: 'fleetlimit, leases on a hot key',
    call: "limiter.consume, lease: 'auto'",
    setup: fleetlimit({ lease: 'auto' }),
  },
  {
    limiter: 'fleetlimit, deny cache',
    call: 'limiter.consume',
    load: 'denied',
    // A limit of 1 per hour, exhausted by the warm-up: the deny cache answers.
    setup: fleetlimit({}, 1, 3_600_000),
  },
]

/** Keeps `inFlight` decisions outstanding for `ms`; decisions completed and admitted. */
async function drive(decide: Decide, inFlight: number, ms: number) {
  let decisions = 0
  let admitted = 0
  const started = performance.now()
  const end = started + ms
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < end) {
        if (await decide()) admitted++
        decisions++
      }
    }),
  )
  return { decisions, admitted, ms: performance.now() - started }
}

export interface DecisionsRow {
  readonly limiter: string
  readonly call: string
  readonly load: 'admitted' | 'denied'
  readonly inFlight: number
  readonly perSecond: number
  readonly decisions: number
  readonly admitted: number
}

export interface BenchmarkRow {
  readonly pipeline: number
  readonly clients: number
  readonly requests: number
  readonly perSecond: number
}

async function redisBenchmark(port: number, sha: string, requests: number, pipeline: number): Promise<BenchmarkRow> {
  const clients = 50
  // As redisStore calls it: KEYS[1] the key, then one binary argument (a consume of one unit, no deadline).
  const call = windowsCall('c', 1, [{ limit: LIMIT, windowMs: WINDOW_MS }])
  const command = encodeCommand(['EVALSHA', sha, 1, 'fleetlimit:bench~sl3-60000:{redis-benchmark}', call])
  const { perSecond } = await respLoad({ port, requests, clients, pipeline, command })
  return { pipeline, clients, requests, perSecond }
}

export async function decisions(options: DecisionsOptions = {}): Promise<PartResult> {
  const { warmMs, durationMs, benchmarkRequests } = { ...FULL, ...options }
  const server = await startRedisServer()
  const rows: DecisionsRow[] = []
  const benchmark: BenchmarkRow[] = []
  let oneInFlight: RoundTripRow[] = []
  const roundTripRounds = 6
  const roundTripMs = Math.round(durationMs / 5)
  try {
    const admin = new Redis(server.url)
    for (const subject of SUBJECTS) {
      for (const inFlight of IN_FLIGHT) {
        await admin.flushall()
        // A fresh default client per cell, as the libraries' documentation sets one up.
        const client = new Redis(server.url)
        let other: Awaited<ReturnType<typeof otherClient>> | undefined
        try {
          await once(client, 'ready')
          if (subject.client) other = await otherClient(subject.client, server.url)
          let decide: Decide
          if (other) {
            const limiter = createRateLimiter({
              store: redisStore(other.client),
              limit: LIMIT,
              window: `${WINDOW_MS}ms`,
              local: false,
            })
            decide = async () => (await limiter.consume('bench')).allowed
          } else {
            decide = await subject.setup(client)
          }
          await drive(decide, inFlight, warmMs)
          const run = await drive(decide, inFlight, durationMs)
          rows.push({
            limiter: subject.limiter,
            call: subject.call,
            load: subject.load ?? 'admitted',
            inFlight,
            perSecond: run.decisions / (run.ms / 1000),
            decisions: run.decisions,
            admitted: run.admitted,
          })
        } finally {
          client.disconnect()
          other?.close()
        }
      }
    }
    await admin.flushall()
    oneInFlight = await roundTrip(server.url, roundTripRounds, roundTripMs)
    await admin.flushall()
    const sha = await admin.script('LOAD', slidingLogScript.lua)
    if (sha !== slidingLogScript.sha1) throw new Error(`SCRIPT LOAD gave ${String(sha)}, not ${slidingLogScript.sha1}`)
    benchmark.push(await redisBenchmark(server.port, slidingLogScript.sha1, benchmarkRequests[0], 1))
    await admin.flushall()
    benchmark.push(await redisBenchmark(server.port, slidingLogScript.sha1, benchmarkRequests[1], 16))
    admin.disconnect()
  } finally {
    await server.stop()
  }

  const rate = (n: number) => Math.round(n).toLocaleString('en')
  const byLimiter = [...new Set(rows.map((r) => `${r.limiter}\u0000${r.call}\u0000${r.load}`))]
  const markdown = [
    `Decisions per second from one Node process on one default ioredis client (one connection), each limiter's`,
    `own Redis operation called directly, no HTTP (fleetlimit's store-only rows also on one default node-redis 6 and one`,
    `default GLIDE client, to choose a client by): ${durationMs / 1000} s per cell after ${warmMs} ms of warm-up, on a`,
    `redis-server of its own on the same machine. Admitted: one key per cell with a limit of ${LIMIT.toExponential(0)}`,
    `per minute, so every decision is admitted (the key's window is emptied between cells); denied: a limit of 1`,
    `per hour, exhausted by the warm-up.`,
    '',
    '| limiter | call | load | decisions/s, 1 in flight | decisions/s, 100 in flight |',
    '|---|---|---|---|---|',
    ...byLimiter.map((id) => {
      const [limiter, call, load] = id.split('\u0000') as [string, string, string]
      const cell = (inFlight: number) =>
        rows.find((r) => r.limiter === limiter && r.load === load && r.inFlight === inFlight)?.perSecond ?? Number.NaN
      return `| ${limiterName(limiter)} | \`${call}\` | ${load} | ${rate(cell(1))} | ${rate(cell(100))} |`
    }),
    '',
    ...roundTripMarkdown(oneInFlight, roundTripRounds, roundTripMs),
    `The server's own ceiling: \`EVALSHA\` of lua/sliding-log.lua with redisStore's argument (one key, limit`,
    `${LIMIT.toExponential(0)}, window ${WINDOW_MS} ms, cost 1, consume), sent as \`redis-benchmark\` sends (bench/resp-load.ts:`,
    `it can send the binary argument, which redis-benchmark cannot):`,
    '',
    '| sent | clients | requests | EVALSHA/s |',
    '|---|---|---|---|',
    ...benchmark.map(
      (b) =>
        `| ${b.pipeline === 1 ? 'unpipelined' : `-P ${b.pipeline}`} | ${b.clients} | ${rate(b.requests)} | ${rate(b.perSecond)} |`,
    ),
    '',
  ].join('\n')
  return {
    title: 'Decisions per second: each limiter’s Redis call, and the server’s ceiling',
    markdown,
    data: {
      settings: {
        warmMs,
        durationMs,
        benchmarkRequests,
        limit: LIMIT,
        windowMs: WINDOW_MS,
        roundTripRounds,
        roundTripMs,
      },
      rows,
      oneInFlight,
      benchmark,
    },
  }
}
