// Failure part: what a client (ioredis with its defaults and with the README's options, node-redis and GLIDE
// with theirs) and fleetlimit's defaults (timeoutMs 100, breaker of 5 failures and 1 s cool-down) cost the caller
// while Redis is killed or frozen, and how soon decisions return to the store when it comes back.
import { once } from 'node:events'
import { createRateLimiter, type RateLimiter, redisStore } from '@fleetlimit/core'
import { type RedisServer, startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { sleep } from '@fleetlimit/test-kit/sleep'
import { GlideClient, Logger } from '@valkey/valkey-glide'
import { Redis, type RedisOptions } from 'ioredis'
import { createClient } from 'redis'
import type { PartResult } from './run.js'

const LOAD = 20 // concurrent callers
const TIMEOUT_MS = 100

// The client options the README gives for a quick return ("When Redis is unavailable").
const README_OPTIONS: RedisOptions = {
  maxRetriesPerRequest: 1,
  retryStrategy: () => 100,
  connectTimeout: 1_000,
}

// GLIDE's core logs every command that fails at warn level, and the faults here fail many on purpose.
Logger.setLoggerConfig('off')

/** A store client made on the server at `url`, ready, and how to close it. */
type Connect = (url: string) => Promise<{ client: Parameters<typeof redisStore>[0]; close: () => void }>

const ioredis =
  (options: RedisOptions): Connect =>
  async (url) => {
    const client = new Redis(url, options)
    client.on('error', () => {})
    await once(client, 'ready')
    return { client, close: () => client.disconnect() }
  }

const CLIENTS: Record<string, Connect> = {
  'ioredis, defaults': ioredis({}),
  'ioredis, README': ioredis(README_OPTIONS),
  'node-redis, defaults': async (url) => {
    const client = createClient({ url })
    client.on('error', () => {})
    await client.connect()
    return { client, close: () => client.destroy() }
  },
  'GLIDE, defaults': async (url) => {
    const { hostname, port } = new URL(url)
    const client = await GlideClient.createClient({ addresses: [{ host: hostname, port: Number(port) }] })
    return { client, close: () => client.close() }
  },
}

interface Sample {
  readonly at: number
  readonly ms: number
  readonly source: string
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
}

/** Keeps LOAD callers deciding until stopped; every decision's start, duration and outcome. */
function load(limiter: RateLimiter) {
  const samples: Sample[] = []
  let running = true
  const caller = async () => {
    while (running) {
      const at = performance.now()
      const source = await limiter.consume('bench').then(
        (d) => d.source,
        () => 'error',
      )
      samples.push({ at, ms: performance.now() - at, source })
      // Yield to timers between decisions, as a server between requests would.
      await new Promise((resolve) => setImmediate(resolve))
    }
  }
  const done = Promise.all(Array.from({ length: LOAD }, caller))
  return {
    samples,
    stop: async () => {
      running = false
      await done
    },
  }
}

async function scenario(
  kind: 'kill' | 'freeze',
  clientName: string,
  { warmupMs, faultMs }: { readonly warmupMs: number; readonly faultMs: number },
) {
  let server: RedisServer = await startRedisServer()
  const connect = CLIENTS[clientName]
  if (!connect) throw new Error(`no client ${clientName}; one of ${Object.keys(CLIENTS).join(', ')}`)
  const { client, close } = await connect(server.url)
  const limiter = createRateLimiter({
    store: redisStore(client),
    limit: 1_000_000,
    window: '1m',
    timeoutMs: TIMEOUT_MS,
    logger: { warn() {} },
  })
  const running = load(limiter)
  await sleep(warmupMs)

  const faultAt = performance.now()
  if (kind === 'kill') await server.stop()
  else server.freeze()
  await sleep(faultMs)

  // With the breaker open: decisions per second of one caller, in a tight loop.
  const openStats = limiter.stats()
  const loopStarted = performance.now()
  let openDecisions = 0
  while (performance.now() - loopStarted < 200) {
    await limiter.consume('bench').catch(() => {})
    openDecisions++
  }
  const openRate = openDecisions / ((performance.now() - loopStarted) / 1000)
  const sentWhileOpen = limiter.stats().storeCalls - openStats.storeCalls

  const backAt = performance.now()
  if (kind === 'kill') server = await startRedisServer([], { port: server.port })
  else server.thaw()
  const recoveredBy = performance.now() + 10_000
  while (performance.now() < recoveredBy && !running.samples.some((s) => s.at > backAt && s.source === 'store')) {
    await sleep(5)
  }
  await sleep(300)
  await running.stop()
  close()
  await server.stop()

  const during = running.samples.filter((s) => s.at >= faultAt && s.at < backAt)
  const firstStore = running.samples.find((s) => s.at > backAt && s.source === 'store')
  return {
    kind,
    client: clientName,
    decisionsDuringFault: during.length,
    slowestMs: during.reduce((most, s) => Math.max(most, s.ms), 0),
    p50Ms: quantile(
      during.map((s) => s.ms),
      0.5,
    ),
    p99Ms: quantile(
      during.map((s) => s.ms),
      0.99,
    ),
    breakerOpenDecisionsPerSecond: Math.round(openRate),
    sentWhileBreakerOpen: sentWhileOpen,
    backToStoreMs: firstStore ? firstStore.at + firstStore.ms - backAt : null,
    stats: limiter.stats(),
  }
}

export interface FailureOptions {
  /** Decisions on a healthy store before the fault. Default 1 000 ms. */
  readonly warmupMs?: number
  /** How long Redis stays killed or frozen: longer than the breaker's 1 s cool-down. Default 2 500 ms. */
  readonly faultMs?: number
  /** The clients to run, by their names in the table. Default: all of them. */
  readonly clients?: readonly string[]
}

export async function failure({
  warmupMs = 1_000,
  faultMs = 2_500,
  clients = Object.keys(CLIENTS),
}: FailureOptions = {}): Promise<PartResult> {
  const sizes = { warmupMs, faultMs }
  const results = []
  // A longer outage too: a default ioredis client backs off to a reconnect attempt every 2 s.
  const faults = [
    { kind: 'kill', faultMs },
    { kind: 'freeze', faultMs },
    { kind: 'kill', faultMs: 4 * faultMs },
  ] as const
  for (const clientName of clients) {
    for (const fault of faults) {
      const result = await scenario(fault.kind, clientName, { ...sizes, faultMs: fault.faultMs })
      results.push({ ...result, faultMs: fault.faultMs })
    }
  }
  const rows = results.map(
    (r) =>
      `| ${r.kind === 'kill' ? 'kill -9, restart' : 'SIGSTOP, SIGCONT'} ${r.faultMs / 1000} s later | ${r.client} | ${r.decisionsDuringFault} | ` +
      `${r.slowestMs.toFixed(1)} | ${r.p50Ms.toFixed(3)} | ${r.p99Ms.toFixed(1)} | ${r.breakerOpenDecisionsPerSecond.toLocaleString('en')} | ` +
      `${r.sentWhileBreakerOpen} | ${r.backToStoreMs === null ? 'never' : r.backToStoreMs.toFixed(0)} |`,
  )
  const markdown = [
    `fail-closed policy, timeoutMs ${TIMEOUT_MS}, default breaker (5 failures, 1 s cool-down), ${LOAD} concurrent callers; ` +
      `ioredis with its defaults or with the README's options (${JSON.stringify({ ...README_OPTIONS, retryStrategy: '() => 100' })}), ` +
      'node-redis and GLIDE with their defaults.',
    '',
    '| fault | client | decisions during the fault | slowest (ms) | p50 (ms) | p99 (ms) | decisions/s of one caller, breaker open | store calls sent while open | back to the store after the server returns (ms) |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n')
  return { title: 'Failure: decisions while Redis is killed or frozen', markdown, data: results }
}
