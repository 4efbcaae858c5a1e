// Failure part: what an ioredis client (with the defaults, and with the README's options) and fleetlimit's
// defaults (timeoutMs 100, breaker of 5 failures and 1 s cool-down) cost the caller while Redis is killed or
// frozen, and how soon decisions return to the store when it comes back.
import { once } from 'node:events'
import { createRateLimiter, type RateLimiter, redisStore } from '@fleetlimit/core'
import { type RedisServer, startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { sleep } from '@fleetlimit/test-kit/sleep'
import { Redis, type RedisOptions } from 'ioredis'
import type { PartResult } from './run.js'

const LOAD = 20 // concurrent callers
const TIMEOUT_MS = 100

// The client options the README gives for a quick return ("When Redis is unavailable").
const README_OPTIONS: RedisOptions = {
  maxRetriesPerRequest: 1,
  retryStrategy: () => 100,
  connectTimeout: 1_000,
}
const CLIENTS = { default: {}, readme: README_OPTIONS } as const
type ClientName = keyof typeof CLIENTS

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
  clientName: ClientName,
  { warmupMs, faultMs }: Required<FailureOptions>,
) {
  let server: RedisServer = await startRedisServer()
  const client = new Redis(server.url, CLIENTS[clientName])
  client.on('error', () => {})
  await once(client, 'ready')
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
  client.disconnect()
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
}

export async function failure({ warmupMs = 1_000, faultMs = 2_500 }: FailureOptions = {}): Promise<PartResult> {
  const sizes = { warmupMs, faultMs }
  const results = []
  // A longer outage too: a default ioredis client backs off to a reconnect attempt every 2 s.
  const faults = [
    { kind: 'kill', faultMs },
    { kind: 'freeze', faultMs },
    { kind: 'kill', faultMs: 4 * faultMs },
  ] as const
  for (const clientName of Object.keys(CLIENTS) as ClientName[]) {
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
      `ioredis client with its defaults, or with the README's options (${JSON.stringify({ ...README_OPTIONS, retryStrategy: '() => 100' })}).`,
    '',
    '| fault | client | decisions during the fault | slowest (ms) | p50 (ms) | p99 (ms) | decisions/s of one caller, breaker open | store calls sent while open | back to the store after the server returns (ms) |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n')
  return { title: 'Failure: decisions while Redis is killed or frozen', markdown, data: results }
}
