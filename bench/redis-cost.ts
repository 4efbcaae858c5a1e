// Redis-cost part: what one decision costs Redis itself, beside a fixed-window counter and beside the least any
// script that decides from a key's stored state must run (the floor). For each scenario, a
// load generator (resp-load.ts, as redis-benchmark would: 50 clients, unpipelined) sends one script's EVALSHA
// after CONFIG RESETSTAT, and the figure is INFO commandstats' usec_per_call of evalsha: the server's time per
// call, whatever the client does. The
// scripts take turns within each round, and the table gives the median of the rounds. Then the memory of one
// key filled to its limit (MEMORY USAGE), per admitted unit, and the time of one call with a large cost, in
// Redis and in the memory store.
// REDIS_COST_BASELINE=<file of Lua text> adds another version of lua/sliding-log.lua (the text as sent, with the
// same arguments and reply) to every round, taking turns with ours, and to the memory table: a change to the script
// is measured beside the code it replaces, on the same server in the same run.
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { memoryStore } from '@fleetlimit/core'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { Redis } from 'ioredis'
// Internal to core (not in its exports), so by path: the script redisStore runs.
import { MAX_BATCH } from '../packages/core/src/store/call-batcher.js'
import { slidingLogScript } from '../packages/core/src/store/scripts.generated.js'
import { costWindowsCall, windowsCall } from '../packages/core/src/store/sliding-log-call.js'
import { slidingLogLayout } from '../packages/core/src/store/sliding-log-layout.generated.js'
import { type Argument, encodeCommand, respLoad } from './resp-load.js'
import type { PartResult } from './run.js'

// The counter the fixed-window peers run: INCR, and PEXPIRE on a key's first hit.
const COUNTER = `local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`

// The floor: what a script that keeps a key's state in the key's value runs to decide on the server's clock, with no
// decision made: TIME, one read of the state and, to admit, one write of it. Ours runs the same commands and, in
// Lua besides, decodes the call and the state, decides, and encodes the new state and the reply. Its reply is the
// time, so that none of that is counted.
const FLOOR = `local time = redis.call('TIME')
local state = redis.call('GETRANGE', KEYS[1], '-${slidingLogLayout.headerBytes}', '-1')
if ARGV[1] == 'write' then redis.call('SETRANGE', KEYS[1], '0', state .. '123456789') end
return time[1] * 1000000 + time[2]`

interface Scenario {
  readonly name: string
  readonly key: string
  /** Calls spread over this many keys (`key:0` to `key:<keys - 1>`, at random); one key when undefined. */
  readonly keys?: number
  readonly limit: number
  readonly windowMs: number
  /** Filled before measuring, on the one key, one unit per call (a key at its limit denies every call). */
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
    key: 'cold',
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
  /** Calls of the large-cost table. */
  readonly largeCalls?: number
  /** Another version of the script's text, measured beside ours (default: the file REDIS_COST_BASELINE names). */
  readonly baselineLua?: string
}

const FULL = { requests: 200_000, rounds: 5, memoryLimits: [10_000, 100_000], largeCalls: 2_000 }

/** usec_per_call of evalsha after `requests` calls of one script, its arguments for a key given by `command`. */
async function usecPerCall(
  port: number,
  client: Redis,
  command: (key: string) => Argument[],
  scenario: Scenario,
  requests: number,
) {
  const { keys } = scenario
  const one = encodeCommand(command(scenario.key))
  const spread = (keys: number) => () => encodeCommand(command(`${scenario.key}:${Math.floor(Math.random() * keys)}`))
  await client.config('RESETSTAT')
  await respLoad({ port, requests, clients: 50, command: keys === undefined ? one : spread(keys) })
  return evalshaUsec(client)
}

async function evalshaUsec(client: Redis): Promise<number> {
  const stats = await client.info('commandstats')
  const perCall = /cmdstat_evalsha:.*usec_per_call=([\d.]+)/.exec(stats)?.[1]
  if (perCall === undefined) throw new Error(`no evalsha in INFO commandstats:\n${stats}`)
  return Number(perCall)
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? 0
}

// The calls of one script run in the batched rows: what redisStore sends with this many calls made at once.
const RUN = MAX_BATCH
const spreadKey = (s: Scenario) => `${s.key}:${Math.floor(Math.random() * (s.keys ?? 1))}`

// As redisStore calls the script: KEYS[1], then one binary argument (a consume of `cost` units, no deadline).
const consumeArgs = (limit: number, windowMs: number, cost = 1) => [windowsCall('c', cost, [{ limit, windowMs }])]
const keyOf = (windowMs: number, key: string) => `fleetlimit:bench~sl3-${windowMs}:{${key}}`
// A calendar policy's consume of the same limit (`period: 'month'` in UTC): one count per key, whatever the limit.
const MONTH = { unit: 'month', timeZone: 'UTC' } as const
const calendarArgs = (limit: number) => [costWindowsCall('consume', [{ limit, windowMs: 1, cost: 1, period: MONTH }])]
const calendarKeyOf = (key: string) => `fleetlimit:bench~pd1-month-UTC:{${key}}`

/** `calls` consumes of `cost` on one key, pipelined by a thousand (by the script of `sha`, ours by default). */
async function fill(
  client: Redis,
  key: string,
  limit: number,
  windowMs: number,
  calls: number,
  cost = 1,
  sha = slidingLogScript.sha1,
) {
  for (let done = 0; done < calls; done += 1_000) {
    const pipeline = client.pipeline()
    for (let i = done; i < Math.min(calls, done + 1_000); i++) {
      pipeline.evalsha(sha, 1, key, ...consumeArgs(limit, windowMs, cost))
    }
    await pipeline.exec()
  }
}

export async function redisCost(options: RedisCostOptions = {}): Promise<PartResult> {
  const { requests, rounds, memoryLimits, largeCalls } = { ...FULL, ...options }
  const baselineFile = process.env.REDIS_COST_BASELINE
  const baselineLua = options.baselineLua ?? (baselineFile ? readFileSync(baselineFile, 'utf8') : undefined)
  const server = await startRedisServer()
  const client = new Redis(server.url)
  await once(client, 'ready')
  try {
    const counterSha = (await client.script('LOAD', COUNTER)) as string
    const floorSha = (await client.script('LOAD', FLOOR)) as string
    await client.script('LOAD', slidingLogScript.lua)
    const baselineSha = baselineLua === undefined ? undefined : ((await client.script('LOAD', baselineLua)) as string)
    const lone = (sha: string) => (s: Scenario) => (key: string) => [
      ...['EVALSHA', sha, '1', keyOf(s.windowMs, key)],
      ...consumeArgs(s.limit, s.windowMs),
    ]
    const ours = lone(slidingLogScript.sha1)
    const calendar = (s: Scenario) => (key: string) => [
      ...['EVALSHA', slidingLogScript.sha1, '1', calendarKeyOf(key)],
      ...calendarArgs(s.limit),
    ]
    const counter = (s: Scenario) => (key: string) => ['EVALSHA', counterSha, '1', `counter:{${key}}`, s.windowMs]
    // A filled key denies every call: the floor reads its log, as our denial does. Elsewhere it reads and writes
    // keys of its own (a state of 94 bytes, as a new log's), which ours never reads.
    const floor = (s: Scenario) => (key: string) =>
      s.fill
        ? ['EVALSHA', floorSha, '1', keyOf(s.windowMs, key), 'read']
        : ['EVALSHA', floorSha, '1', `floor:{${key}}`, 'write']
    // As redisStore sends the calls a process makes at once: RUN calls of one script run (on cold keys, RUN keys).
    const runsOf = (sha: string) => (s: Scenario) => (key: string) => {
      const keys = Array.from({ length: RUN }, (_, i) => (s.keys === undefined || i === 0 ? key : spreadKey(s)))
      return [
        ...['EVALSHA', sha, String(RUN), ...keys.map((k) => keyOf(s.windowMs, k))],
        Buffer.concat(keys.flatMap(() => consumeArgs(s.limit, s.windowMs))),
      ]
    }
    const inRuns = runsOf(slidingLogScript.sha1)
    const rows = []
    for (const scenario of SCENARIOS) {
      const samples = {
        counter: [] as number[],
        floor: [] as number[],
        ours: [] as number[],
        inRuns: [] as number[],
        baseline: [] as number[],
        baselineInRuns: [] as number[],
        calendar: [] as number[],
      }
      const refill = async () => {
        await client.flushall()
        if (scenario.fill) {
          await fill(client, keyOf(scenario.windowMs, scenario.key), scenario.limit, scenario.windowMs, scenario.fill)
          // The calendar key filled to its limit too, so that it denies as the log does.
          const pipeline = client.pipeline()
          for (let i = 0; i < scenario.fill; i++) {
            pipeline.evalsha(slidingLogScript.sha1, 1, calendarKeyOf(scenario.key), ...calendarArgs(scenario.limit))
          }
          await pipeline.exec()
        }
      }
      const runs = Math.ceil(requests / RUN)
      for (let round = 0; round < rounds; round++) {
        await refill()
        samples.ours.push(await usecPerCall(server.port, client, ours(scenario), scenario, requests))
        samples.counter.push(await usecPerCall(server.port, client, counter(scenario), scenario, requests))
        samples.floor.push(await usecPerCall(server.port, client, floor(scenario), scenario, requests))
        samples.calendar.push(await usecPerCall(server.port, client, calendar(scenario), scenario, requests))
        if (baselineSha !== undefined) {
          await refill()
          samples.baseline.push(await usecPerCall(server.port, client, lone(baselineSha)(scenario), scenario, requests))
        }
        await refill()
        samples.inRuns.push((await usecPerCall(server.port, client, inRuns(scenario), scenario, runs)) / RUN)
        if (baselineSha !== undefined) {
          await refill()
          const us = await usecPerCall(server.port, client, runsOf(baselineSha)(scenario), scenario, runs)
          samples.baselineInRuns.push(us / RUN)
        }
      }
      const counterUs = median(samples.counter)
      const floorUs = median(samples.floor)
      const oursUs = median(samples.ours)
      const inRunsUs = median(samples.inRuns)
      const baselineUs = median(samples.baseline)
      const baselineInRunsUs = median(samples.baselineInRuns)
      const calendarUs = median(samples.calendar)
      rows.push({
        scenario: scenario.name,
        counterUs,
        floorUs,
        floorRatio: floorUs / counterUs,
        oursUs,
        ratio: oursUs / counterUs,
        inRunsUs,
        inRunsRatio: inRunsUs / counterUs,
        calendarUs,
        calendarRatio: calendarUs / oursUs,
        ...(baselineSha === undefined ? {} : { baselineUs, baselineInRunsUs }),
        samples,
      })
    }

    // Memory: every unit its own call (so its own entry: the most a log holds per unit), and calls of 1 000 units.
    const memory = []
    for (const limit of memoryLimits) {
      const key = keyOf(600_000, 'memory')
      const usage = async () => Number(await client.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'))
      await client.flushall()
      await fill(client, key, limit, 600_000, limit)
      const bytes = await usage()
      await client.flushall()
      await fill(client, key, limit, 600_000, limit / 1_000, 1_000)
      const bytesPerThousand = await usage()
      let baselineBytes: number | undefined
      if (baselineSha !== undefined) {
        await client.flushall()
        await fill(client, key, limit, 600_000, limit, 1, baselineSha)
        baselineBytes = await usage()
      }
      await client.set('counter:{memory}', String(limit))
      const counterBytes = Number(await client.call('MEMORY', 'USAGE', 'counter:{memory}', 'SAMPLES', '0'))
      memory.push({ limit, bytes, perUnit: bytes / limit, bytesPerThousand, counterBytes, baselineBytes })
    }

    // Calls of a cost of 1 000 000 at a limit of 1e9, beside calls of a cost of 1: Redis time per call, and the
    // memory store's (median, 99th percentile and slowest, which a pause of the process sets at either cost).
    const large = { cost: 1_000_000, limit: 1e9, windowMs: 3_600_000 }
    const costs = [1, large.cost]
    const redisUs: number[] = []
    const memoryUs: { median: number; p99: number; max: number }[] = []
    for (const cost of costs) {
      await client.flushall()
      await client.config('RESETSTAT')
      await fill(client, keyOf(large.windowMs, 'large'), large.limit, large.windowMs, largeCalls, cost)
      redisUs.push(await evalshaUsec(client))
      const store = memoryStore()
      const times: number[] = []
      for (let i = 0; i < largeCalls; i++) {
        const started = performance.now()
        await store.consume([{ key: 'large', limit: large.limit, windowMs: large.windowMs, cost }])
        times.push((performance.now() - started) * 1000)
      }
      times.sort((a, b) => a - b)
      const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))] ?? 0
      memoryUs.push({ median: at(0.5), p99: at(0.99), max: at(1) })
    }
    const us = (n: number | undefined) => `${(n ?? 0).toFixed(1)} µs`
    const pct = (ours: number, base: number) => `${(((ours - base) / base) * 100).toFixed(1)}%`
    const beside =
      baselineSha === undefined
        ? []
        : [
            `Beside the baseline script (REDIS_COST_BASELINE, ${Buffer.byteLength(baselineLua ?? '')} bytes; ours ${Buffer.byteLength(slidingLogScript.lua)} bytes),`,
            'the same calls in the same rounds, taking turns (median of the rounds):',
            '',
            '| scenario | baseline alone (µs) | ours alone (µs) | change | baseline in runs, per decision (µs) | ours in runs (µs) | change |',
            '|---|---|---|---|---|---|---|',
            ...rows.map(
              (r) =>
                `| ${r.scenario} | ${(r.baselineUs ?? 0).toFixed(2)} | ${r.oursUs.toFixed(2)} | ${pct(r.oursUs, r.baselineUs ?? 0)} | ${(r.baselineInRunsUs ?? 0).toFixed(2)} | ${r.inRunsUs.toFixed(2)} | ${pct(r.inRunsUs, r.baselineInRunsUs ?? 0)} |`,
            ),
            '',
            ...memory.map(
              (m) =>
                `Memory of a key filled to ${m.limit.toLocaleString('en')}, one unit per call: baseline ${(m.baselineBytes ?? 0).toLocaleString('en')} B, ours ${m.bytes.toLocaleString('en')} B.`,
            ),
            '',
          ]

    const markdown = [
      `Redis time per call: \`INFO commandstats\` usec_per_call of \`evalsha\` after ${requests.toLocaleString('en')} calls`,
      `by bench/resp-load.ts (50 clients, unpipelined, as redis-benchmark sends); median of ${rounds} rounds, the scripts taking turns.`,
      '',
      'The floor: `TIME` and a `GETRANGE` of 85 bytes (and, where calls are admitted, a `SETRANGE` of 94), with no',
      "decision made: what any script that decides from a key's stored state on the server's clock runs at least.",
      '',
      `The last columns: the same calls in runs of ${RUN} (one EVALSHA with ${RUN} calls, as redisStore sends the calls a`,
      'process makes at once), Redis time per decision (usec_per_call divided by the calls in a run).',
      '',
      `| scenario | \`INCR\`+\`PEXPIRE\` script (µs) | floor (µs) | ratio | lua/sliding-log.lua (µs) | ratio | in runs of ${RUN}, per decision (µs) | ratio |`,
      '|---|---|---|---|---|---|---|---|',
      ...rows.map(
        (r) =>
          `| ${r.scenario} | ${r.counterUs.toFixed(2)} | ${r.floorUs.toFixed(2)} | ${r.floorRatio.toFixed(2)}x | ${r.oursUs.toFixed(2)} | ${r.ratio.toFixed(2)}x | ${r.inRunsUs.toFixed(2)} | ${r.inRunsRatio.toFixed(2)}x |`,
      ),
      '',
      "A calendar policy (`period: 'month'`, one count per key) beside the sliding window, the same calls in the same",
      'rounds (the same script: a period is one of its windows; the call names the period starts around its clock):',
      '',
      '| scenario | sliding window (µs) | calendar month (µs) | ratio |',
      '|---|---|---|---|',
      ...rows.map(
        (r) =>
          `| ${r.scenario} | ${r.oursUs.toFixed(2)} | ${r.calendarUs.toFixed(2)} | ${r.calendarRatio.toFixed(2)}x |`,
      ),
      '',
      'Memory of one key filled to its limit (`MEMORY USAGE key SAMPLES 0`), window 10 minutes: one unit per call',
      '(every unit its own entry), and 1 000 units per call:',
      '',
      '| limit | one unit per call | per unit | 1 000 units per call | a counter |',
      '|---|---|---|---|---|',
      ...memory.map(
        (m) =>
          `| ${m.limit.toLocaleString('en')} | ${m.bytes.toLocaleString('en')} B | ${m.perUnit.toFixed(1)} B | ${m.bytesPerThousand.toLocaleString('en')} B | ${m.counterBytes} B |`,
      ),
      '',
      `A cost of ${large.cost.toLocaleString('en')} at a limit of 1e9 per hour beside a cost of 1, ${largeCalls.toLocaleString('en')} calls on one key each`,
      '(at the large cost, the first thousand admitted and the rest denied):',
      '',
      '| store | cost 1 | cost 1 000 000 |',
      '|---|---|---|',
      `| redisStore: Redis time (usec_per_call of evalsha) | ${us(redisUs[0])} | ${us(redisUs[1])} |`,
      ...(['median', 'p99', 'max'] as const).map(
        (q) => `| memoryStore: Node time per call, ${q} | ${us(memoryUs[0]?.[q])} | ${us(memoryUs[1]?.[q])} |`,
      ),
      '',
      ...beside,
    ].join('\n')
    return {
      title: 'Redis cost: server time and memory per decision',
      markdown,
      data: { rows, memory, large: { ...large, costs, calls: largeCalls, redisUs, memoryUs } },
    }
  } finally {
    client.disconnect()
    await server.stop()
  }
}
