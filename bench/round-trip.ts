// The cost of one round trip at 1 call in flight: `consume` with `local: false` on redisStore(ioredis), beside a
// bare EVALSHA of an INCR+PEXPIRE script from a second ioredis client in the same process, and beside the floor
// under ours: one EVALSHA of lua/sliding-log.lua with redisStore's argument encoding and reply decoding, from a
// third client, with no limiter, guard or batcher. Rounds taking turns, so a noisy machine weighs on each alike.
import { once } from 'node:events'
import { createRateLimiter, redisStore } from '@fleetlimit/core'
import { Redis } from 'ioredis'
// Internal to core (not in its exports), so by path: the script, its argument and its reply, as redisStore has them.
import { slidingLogScript } from '../packages/core/src/store/scripts.generated.js'
import { readSlidingLog, windowsCall } from '../packages/core/src/store/sliding-log-call.js'

export interface RoundTripRow {
  readonly load: 'admitted' | 'denied'
  /** µs per decision in each round, in the order run. */
  readonly fleetlimit: readonly number[]
  readonly counter: readonly number[]
  readonly floor: readonly number[]
}

const COUNTER_LUA = "local n = redis.call('INCR', KEYS[1]) redis.call('PEXPIRE', KEYS[1], ARGV[1]) return n"
const WINDOW_MS = 60_000

/** µs per call of `call`, one in flight, for `ms`. */
async function usPerCall(call: () => Promise<unknown>, ms: number): Promise<number> {
  let calls = 0
  const started = performance.now()
  while (performance.now() - started < ms) {
    await call()
    calls++
  }
  return ((performance.now() - started) * 1000) / calls
}

export async function roundTrip(url: string, rounds: number, roundMs: number): Promise<RoundTripRow[]> {
  const ours = new Redis(url)
  const counter = new Redis(url)
  const floor = new Redis(url)
  try {
    await Promise.all([once(ours, 'ready'), once(counter, 'ready'), once(floor, 'ready')])
    const counterSha = String(await counter.script('LOAD', COUNTER_LUA))
    await floor.script('LOAD', slidingLogScript.lua)
    const rows: RoundTripRow[] = []
    for (const load of ['admitted', 'denied'] as const) {
      // Denied: a limit of 1 per hour, used by the first call of the warm-up.
      const limit = load === 'admitted' ? 1_000_000_000 : 1
      const windowMs = load === 'admitted' ? WINDOW_MS : 3_600_000
      const limiter = createRateLimiter({ store: redisStore(ours), limit, window: `${windowMs}ms`, local: false })
      const key = `round-trip:${load}`
      const floorKey = `fleetlimit:floor~sl3-${windowMs}:{${load}}`
      const subjects = {
        fleetlimit: async () => {
          const decision = await limiter.consume(load)
          if (decision.source !== 'store') throw new Error(`a decision from ${decision.source}, not the store`)
        },
        counter: () => counter.evalsha(counterSha, 1, key, WINDOW_MS),
        floor: async () => {
          const bytes = windowsCall('c', 1, [{ limit, windowMs }])
          readSlidingLog(await floor.callBuffer('EVALSHA', slidingLogScript.sha1, 1, floorKey, bytes), 1)
        },
      }
      for (const call of Object.values(subjects)) await usPerCall(call, roundMs)
      const row = { load, fleetlimit: [] as number[], counter: [] as number[], floor: [] as number[] }
      for (let round = 0; round < rounds; round++) {
        row.fleetlimit.push(await usPerCall(subjects.fleetlimit, roundMs))
        row.counter.push(await usPerCall(subjects.counter, roundMs))
        row.floor.push(await usPerCall(subjects.floor, roundMs))
      }
      rows.push(row)
    }
    return rows
  } finally {
    ours.disconnect()
    counter.disconnect()
    floor.disconnect()
  }
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[sorted.length >> 1] ?? Number.NaN
}

export function roundTripMarkdown(rows: readonly RoundTripRow[], rounds: number, roundMs: number): string[] {
  const us = (n: number) => n.toFixed(1)
  const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`
  return [
    `One call in flight, µs per decision (median of ${rounds} rounds of ${roundMs} ms, each subject in turn):`,
    '`limiter.consume` with `local: false` on `redisStore(ioredis)`; a bare `EVALSHA` of an `INCR`+`PEXPIRE`',
    'script from a second client; and the floor under ours, one `EVALSHA` of lua/sliding-log.lua with',
    "redisStore's argument encoding and reply decoding from a third client (no limiter, guard or batcher).",
    "fleetlimit / floor is the median of the rounds' own ratios: each round runs both, one after the other.",
    '',
    '| load | fleetlimit µs | INCR+PEXPIRE µs | floor µs | fleetlimit / floor | fleetlimit / INCR | floor / INCR |',
    '|---|---|---|---|---|---|---|',
    ...rows.map((row) => {
      const [ours, counter, floor] = [median(row.fleetlimit), median(row.counter), median(row.floor)]
      const perRound = median(row.fleetlimit.map((us, i) => us / (row.floor[i] as number)))
      return `| ${row.load} | ${us(ours)} | ${us(counter)} | ${us(floor)} | ${perRound.toFixed(2)}x | ${ratio(ours, counter)} | ${ratio(floor, counter)} |`
    }),
    '',
  ]
}
