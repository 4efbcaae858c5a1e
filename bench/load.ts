// Load part: a healthy Redis under bursts from one process, with fleetlimit's DEFAULT options (timeoutMs 100,
// breaker of 5 failures): a burst in a freshly started process, a larger one in a warm process, and one issued
// just before the event loop is blocked for 300 ms. Each row: how many calls the store decided, how many failed,
// breaker openings, and whether the units Redis recorded equal the units admitted. Then a 600 ms CLIENT PAUSE
// while five lease calls are in flight: the units those given-up calls left reserved in Redis.
import { fork } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { createRateLimiter, redisStore } from '@fleetlimit/core'
import { logUnits } from '@fleetlimit/test-kit/log-units'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { Redis } from 'ioredis'
import { type BurstResult, burst } from './load-burst.js'
import type { PartResult } from './run.js'

export interface LoadOptions {
  readonly freshCalls?: number
  readonly warmCalls?: number
  readonly blockedCalls?: number
  readonly trials?: number
}

const FULL = { freshCalls: 2_000, warmCalls: 16_000, blockedCalls: 2_000, trials: 3 }
const KEY = (tenant: string) => `fleetlimit:1000000000-per-60000ms~sl3-60000:{${tenant}}`
const quiet = { warn() {} }

interface Row extends BurstResult {
  readonly scenario: string
  readonly recorded: number
}

async function freshProcess(redisUrl: string, calls: number, tenant: string): Promise<BurstResult> {
  const worker = fork(fileURLToPath(new URL('./load-worker.ts', import.meta.url)), {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  worker.send({ redisUrl, calls, tenant })
  const [result] = (await once(worker, 'message')) as [BurstResult]
  await once(worker, 'exit')
  return result
}

/** Five lease calls in flight while Redis is paused for 600 ms: the units they still hold once it resumes. */
async function pausedLeases(client: Redis, pauser: Redis, trial: number) {
  const limiter = createRateLimiter({
    store: redisStore(client),
    name: 'upstream',
    limit: 10_000,
    window: '1m',
    local: { lease: 400 },
    logger: quiet,
  })
  await limiter.consume(`warm-${trial}`)
  await pauser.call('CLIENT', 'PAUSE', '600', 'ALL')
  const tenants = Array.from({ length: 5 }, (_, i) => `paused-${trial}-${i}`)
  const failed = (
    await Promise.all(
      tenants.map((t) =>
        limiter.consume(t).then(
          () => 0,
          () => 1,
        ),
      ),
    )
  ).reduce((a: number, b: number) => a + b, 0)
  const held = await Promise.all(tenants.map((t) => logUnits(client, `fleetlimit:upstream~sl3-60000:{${t}}`)))
  return { failed, unitsHeld: held.reduce((a, b) => a + b, 0) }
}

export async function load(options: LoadOptions = {}): Promise<PartResult> {
  const { freshCalls, warmCalls, blockedCalls, trials } = { ...FULL, ...options }
  const server = await startRedisServer()
  const client = new Redis(server.url)
  const pauser = new Redis(server.url)
  await Promise.all([once(client, 'ready'), once(pauser, 'ready')])
  const rows: Row[] = []
  const pauses: { failed: number; unitsHeld: number }[] = []
  try {
    const warm = createRateLimiter({ store: redisStore(client), limit: 1_000_000_000, window: '1m', logger: quiet })
    await burst(warm, 'warm-up', 2_000)
    for (let trial = 0; trial < trials; trial++) {
      const record = async (scenario: string, tenant: string, result: BurstResult) =>
        rows.push({ scenario, ...result, recorded: await logUnits(client, KEY(tenant)) })
      await record(
        `${freshCalls.toLocaleString('en')} at once, fresh process`,
        `fresh-${trial}`,
        await freshProcess(server.url, freshCalls, `fresh-${trial}`),
      )
      await record(
        `${warmCalls.toLocaleString('en')} at once, warm process`,
        `warm-${trial}`,
        await burst(warm, `warm-${trial}`, warmCalls),
      )
      await record(
        `${blockedCalls.toLocaleString('en')} at once, then the event loop blocked 300 ms`,
        `blocked-${trial}`,
        await burst(warm, `blocked-${trial}`, blockedCalls, () => {
          const until = performance.now() + 300
          while (performance.now() < until) {}
        }),
      )
      pauses.push(await pausedLeases(client, pauser, trial))
    }
  } finally {
    client.disconnect()
    pauser.disconnect()
    await server.stop()
  }
  const table = rows.map(
    (r) =>
      `| ${r.scenario} | ${r.store.toLocaleString('en')} | ${r.errors} | ${r.breakerOpenings} | ` +
      `${r.admitted.toLocaleString('en')} | ${r.recorded.toLocaleString('en')} | ${r.slowestMs.toFixed(0)} |`,
  )
  const markdown = [
    'Default options (timeoutMs 100, breaker of 5 failures, 128 calls in flight per server), one healthy local',
    `redis-server, one key per burst; ${trials} trials of each.`,
    '',
    '| burst | decided by the store | errors | breaker openings | units admitted | units recorded in Redis | slowest call (ms) |',
    '|---|---|---|---|---|---|---|',
    ...table,
    '',
    'A 600 ms `CLIENT PAUSE` while five calls that each ask for a 400-unit lease are in flight (limit 10,000 per',
    'minute): the calls fail at their 100 ms deadline, and the units they leave reserved in Redis once it resumes:',
    '',
    '| trial | lease calls failed | units left reserved |',
    '|---|---|---|',
    ...pauses.map((p, i) => `| ${i + 1} | ${p.failed} of 5 | ${p.unitsHeld} |`),
    '',
  ].join('\n')
  return { title: 'Load: bursts on a healthy Redis', markdown, data: { rows, pauses } }
}
