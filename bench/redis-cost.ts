// Redis-cost part: what one decision costs Redis itself, beside a fixed-window counter. For each scenario,
// redis-benchmark sends one script's EVALSHA (50 clients, unpipelined) after CONFIG RESETSTAT, and the figure
// is INFO commandstats' usec_per_call of evalsha: the server's time per call, whatever the client does. The
// scripts take turns within each round, and the table gives the median of the rounds. Then the memory of one
// key filled to its limit (MEMORY USAGE), per admitted unit.
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { promisify } from 'node:util'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { Redis } from 'ioredis'
// Internal to core (not in its exports), so by path: the script and the key format redisStore uses.
import { slidingLogScript } from '../packages/core/src/store/scripts.generated.js'
import type { PartResult } from './run.js'

const run = promisify(execFile)

// The counter the fixed-window peers run: INCR, and PEXPIRE on a key's first hit.
const COUNTER = `local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`

interface Scenario {
  readonly name: string
  /** The key argument: `__rand_int__` in it spreads calls over `-r` keys. */
  readonly key: string
  readonly keys?: number
  readonly limit: number
  readonly windowMs: number
  /** Filled before measuring, on the one key (a key at its limit denies every call). */
  readonly fill?: number
}

const SCENARIOS: readonly Scenario[] = [
  { name: 'one hot key, every call denied (limit 100)', key: 'hot-denied', limit: 100, windowMs: 60_000, fill: 100 },
  {
    name: 'one hot key, every call admitted (limit 1e6 per 1 s)',
    key: 'hot-admitted',
    limit: 1_000_000,
    windowMs: 1_000,
  },
  {
    name: '10,000 keys, about 20 admissions each',
    key: 'cold:__rand_int__',
    keys: 10_000,
    limit: 100,
    windowMs: 60_000,
  },
]

export interface RedisCostOptions {
  readonly requests?: number
  readonly rounds?: number
  /** Limits of the memory table. */
  readonly memoryLimits?: readonly number[]
}

const FULL = { requests: 200_000, rounds: 5, memoryLimits: [10_000, 100_000] }

/** usec_per_call of evalsha after `requests` calls of one script by redis-benchmark. */
async function usecPerCall(port: number, client: Redis, args: readonly string[], scenario: Scenario, requests: number) {
  await client.config('RESETSTAT')
  await run('redis-benchmark', [
    ...['-h', '127.0.0.1', '-p', String(port), '-c', '50', '-n', String(requests), '-P', '1', '-q'],
    ...['-r', String(scenario.keys ?? 1_000_000_000)],
    ...args,
  ])
  const stats = await client.info('commandstats')
  const perCall = /cmdstat_evalsha:.*usec_per_call=([\d.]+)/.exec(stats)?.[1]
  if (perCall === undefined) throw new Error(`no evalsha in INFO commandstats:\n${stats}`)
  return Number(perCall)
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? 0
}

export async function redisCost(options: RedisCostOptions = {}): Promise<PartResult> {
  const { requests, rounds, memoryLimits } = { ...FULL, ...options }
  const server = await startRedisServer()
  const client = new Redis(server.url)
  await once(client, 'ready')
  try {
    const counterSha = (await client.script('LOAD', COUNTER)) as string
    await client.script('LOAD', slidingLogScript.lua)
    const ours = (s: Scenario) => [
      ...['EVALSHA', slidingLogScript.sha1, '1', `fleetlimit:bench~sl1-${s.windowMs}:{${s.key}}`],
      ...[String(s.limit), String(s.windowMs), '1', 'm__rand_int__', 'consume', '0'],
    ]
    const counter = (s: Scenario) => ['EVALSHA', counterSha, '1', `counter:{${s.key}}`, String(s.windowMs)]
    const rows = []
    for (const scenario of SCENARIOS) {
      const samples = { counter: [] as number[], ours: [] as number[] }
      for (let round = 0; round < rounds; round++) {
        await client.flushall()
        if (scenario.fill) {
          const key = `fleetlimit:bench~sl1-${scenario.windowMs}:{${scenario.key}}`
          const fill = [scenario.limit, scenario.windowMs, scenario.fill, `fill${round}`, 'consume', 0]
          await client.evalsha(slidingLogScript.sha1, 1, key, ...fill)
        }
        samples.ours.push(await usecPerCall(server.port, client, ours(scenario), scenario, requests))
        samples.counter.push(await usecPerCall(server.port, client, counter(scenario), scenario, requests))
      }
      const counterUs = median(samples.counter)
      const oursUs = median(samples.ours)
      rows.push({ scenario: scenario.name, counterUs, oursUs, ratio: oursUs / counterUs, samples })
    }

    const memory = []
    for (const limit of memoryLimits) {
      await client.flushall()
      const key = `fleetlimit:bench~sl1-600000:{memory}`
      // In calls of 1 000 units, the most one call records.
      for (let filled = 0; filled < limit; filled += 1_000) {
        await client.evalsha(
          slidingLogScript.sha1,
          1,
          key,
          limit,
          600_000,
          Math.min(1_000, limit - filled),
          `f${filled}`,
          'consume',
          0,
        )
      }
      const bytes = Number(await client.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'))
      await client.set('counter:{memory}', String(limit))
      const counterBytes = Number(await client.call('MEMORY', 'USAGE', 'counter:{memory}', 'SAMPLES', '0'))
      memory.push({ limit, bytes, perUnit: bytes / limit, counterBytes })
    }

    const markdown = [
      `Redis time per call: \`INFO commandstats\` usec_per_call of \`evalsha\` after ${requests.toLocaleString('en')} calls`,
      `by redis-benchmark (50 clients, unpipelined); median of ${rounds} rounds, the scripts taking turns.`,
      '',
      '| scenario | `INCR`+`PEXPIRE` script (µs) | lua/sliding-log.lua (µs) | ratio |',
      '|---|---|---|---|',
      ...rows.map(
        (r) => `| ${r.scenario} | ${r.counterUs.toFixed(2)} | ${r.oursUs.toFixed(2)} | ${r.ratio.toFixed(1)}x |`,
      ),
      '',
      'Memory of one key filled to its limit (`MEMORY USAGE key SAMPLES 0`):',
      '',
      '| limit | lua/sliding-log.lua | per unit | a counter |',
      '|---|---|---|---|',
      ...memory.map(
        (m) =>
          `| ${m.limit.toLocaleString('en')} | ${m.bytes.toLocaleString('en')} B | ${m.perUnit.toFixed(1)} B | ${m.counterBytes} B |`,
      ),
      '',
    ].join('\n')
    return { title: 'Redis cost: server time and memory per decision', markdown, data: { rows, memory } }
  } finally {
    client.disconnect()
    await server.stop()
  }
}
