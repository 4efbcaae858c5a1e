// Accuracy part: the most admissions in any window, for the popular Redis limiters and for fleetlimit, at a
// limit of 100 per 2 s. A burst either side of a fixed window's boundary, then a fleet of four processes on
// one key. Every limiter runs behind its framework's middleware over HTTP on 127.0.0.1.
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { maxInWindow } from '@fleetlimit/test-kit/recording-store'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { sleep } from '@fleetlimit/test-kit/sleep'
import { Redis } from 'ioredis'
import type { WorkerMessage, WorkerReport } from './accuracy-worker.js'
import { type Exchange, httpClient } from './http-get.js'
import { LIMITERS, type LimiterId, startLimitedServer, wallNow } from './limiter-servers.js'
import type { PartResult } from './run.js'
import { lineChart } from './svg.js'

const LIMIT = 100
const FLEET = 4
const PER_PROCESS = 100 // requests per second each: 400/s against 50/s

export interface AccuracyOptions {
  /** The fleet scenario's duration, as a fraction of 6 s. Default 1. */
  readonly scale?: number
  /** The window of every limiter. Default 2 000 ms; whole seconds, as rate-limiter-flexible needs. */
  readonly windowMs?: number
}

export interface AccuracyRow {
  readonly limiter: LimiterId
  readonly name: string
  readonly algorithm: string
  readonly basis: string
  readonly sent: number
  readonly admitted: number
  /** The most admissions in any window of windowMs, on the row's basis. */
  readonly maxInWindow: number
  readonly ratio: number
  /** The most admitted requests whose whole round trip lies within one window: a lower bound. */
  readonly roundTripLowerBound: number
  /** The same count as maxInWindow, from the times at which the handler behind the limiter ran. */
  readonly maxInWindowHandler: number
}

interface Run {
  readonly admissions: readonly number[]
  readonly handlerTimes: readonly number[]
  readonly exchanges: readonly Exchange[]
}

/**
 * The most admitted requests sent at or after some time a and answered before a + windowMs: each one's decision
 * lies in [a, a + windowMs), so no limiter admitted fewer than this in a window.
 */
export function roundTripLowerBound(exchanges: readonly Exchange[], windowMs: number): number {
  const admitted = exchanges.filter((e) => e.status === 200).sort((x, y) => x.sent - y.sent)
  let most = 0
  for (let i = 0; i < admitted.length; i++) {
    const end = (admitted[i] as Exchange).sent + windowMs
    let count = 0
    for (let j = i; j < admitted.length && (admitted[j] as Exchange).sent < end; j++) {
      if ((admitted[j] as Exchange).done < end) count++
    }
    most = Math.max(most, count)
  }
  return most
}

function row(limiter: LimiterId, run: Run, windowMs: number): AccuracyRow {
  const info = LIMITERS.find((l) => l.id === limiter) as (typeof LIMITERS)[number]
  const most = maxInWindow(run.admissions, windowMs)
  return {
    limiter,
    name: info.name,
    algorithm: info.algorithm,
    basis: info.basis,
    sent: run.exchanges.length,
    admitted: run.exchanges.filter((e) => e.status === 200).length,
    maxInWindow: most,
    ratio: most / LIMIT,
    roundTripLowerBound: roundTripLowerBound(run.exchanges, windowMs),
    maxInWindowHandler: maxInWindow(run.handlerTimes, windowMs),
  }
}

/** One request opens the window at t0; LIMIT requests at once at 95 % of the window, LIMIT more at 105 %. */
async function boundaryBurst(limiter: LimiterId, redisUrl: string, windowMs: number) {
  const server = await startLimitedServer(limiter, { redisUrl, limit: LIMIT, windowMs })
  const client = httpClient(server.port, LIMIT)
  try {
    await client.open()
    server.forget()
    const t0 = wallNow()
    const first = await client.get('/')
    await sleep(t0 + 0.95 * windowMs - wallNow())
    const before = Promise.all(Array.from({ length: LIMIT }, () => client.get('/')))
    await sleep(t0 + 1.05 * windowMs - wallNow())
    const after = Promise.all(Array.from({ length: LIMIT }, () => client.get('/')))
    const exchanges = [first, ...(await before), ...(await after)]
    return { t0, run: { admissions: server.admissions, handlerTimes: server.handlerTimes, exchanges } }
  } finally {
    client.close()
    await server.close()
  }
}

/** FLEET worker processes, each serving the limiter and sending PER_PROCESS requests a second to itself. */
async function fleet(redis: Redis, redisUrl: string, windowMs: number, durationMs: number) {
  const workerPath = fileURLToPath(new URL('./accuracy-worker.ts', import.meta.url))
  const workers = Array.from({ length: FLEET }, () =>
    fork(workerPath, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  )
  const reply = <T>(child: (typeof workers)[number]) =>
    new Promise<T>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`accuracy worker exited with ${code}`))
      child.once('exit', onExit)
      child.once('message', (message: T) => {
        child.off('exit', onExit)
        resolve(message)
      })
    })
  const post = (message: WorkerMessage) => {
    for (const child of workers) child.send(message)
  }
  const runs = new Map<LimiterId, Run>()
  try {
    for (const { id } of LIMITERS) {
      await redis.flushall()
      const ready = workers.map((child) => reply(child))
      post({ type: 'setup', limiter: id, redisUrl, limit: LIMIT, windowMs })
      await Promise.all(ready)
      const done = workers.map((child) => reply<WorkerReport>(child))
      post({ type: 'go', startAt: wallNow() + 100, durationMs, perSecond: PER_PROCESS })
      const reports = await Promise.all(done)
      runs.set(id, {
        admissions: reports.flatMap((r) => r.admissions),
        handlerTimes: reports.flatMap((r) => r.handlerTimes),
        exchanges: reports.flatMap((r) => r.exchanges),
      })
    }
  } finally {
    // Each has reported and closed its server by now.
    for (const child of workers) if (child.exitCode === null) child.kill()
  }
  return runs
}

/** Step points of the admissions in the window ending at each moment, in ms after t0. */
function trailingCount(admissions: readonly number[], t0: number, windowMs: number): [number, number][] {
  const events = admissions
    .flatMap((t) => [
      [t - t0, 1],
      [t - t0 + windowMs, -1],
    ])
    .sort((a, b) => (a[0] as number) - (b[0] as number) || (a[1] as number) - (b[1] as number))
  const points: [number, number][] = [[0, 0]]
  let count = 0
  for (const [at, change] of events as [number, number][]) {
    points.push([at, count])
    count += change
    points.push([at, count])
  }
  return points
}

export async function accuracy({ scale = 1, windowMs = 2_000 }: AccuracyOptions = {}): Promise<PartResult> {
  const durationMs = Math.round(6_000 * scale)
  const server = await startRedisServer()
  const redis = new Redis(server.url)
  const burst: AccuracyRow[] = []
  const series: { name: string; points: [number, number][] }[] = []
  let fleetRows: AccuracyRow[]
  try {
    for (const { id, name } of LIMITERS) {
      await redis.flushall()
      const { t0, run } = await boundaryBurst(id, server.url, windowMs)
      burst.push(row(id, run, windowMs))
      series.push({ name, points: trailingCount(run.admissions, t0, windowMs) })
    }
    const runs = await fleet(redis, server.url, windowMs, durationMs)
    fleetRows = [...runs].map(([id, run]) => row(id, run, windowMs))
  } finally {
    redis.disconnect()
    await server.stop()
  }

  const seconds = `${windowMs / 1000} s`
  const table = (rows: readonly AccuracyRow[]) => [
    `| limiter | algorithm | sent | admitted | most admitted in any ${seconds} | ratio of the limit | basis | on handler times | round-trip lower bound |`,
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${r.algorithm} | ${r.sent} | ${r.admitted} | **${r.maxInWindow}** | **${r.ratio.toFixed(2)}** | ${r.basis} | ` +
        `${r.maxInWindowHandler} | ${r.roundTripLowerBound} |`,
    ),
  ]
  const markdown = [
    `Limit ${LIMIT} per ${seconds} for every limiter, one key, each behind its framework's middleware over HTTP on`,
    '127.0.0.1 (the peers on their own ioredis client; fleetlimit through @fleetlimit/express), one Redis.',
    '',
    `**Boundary burst.** One request at t0 opens the window (a fixed window starts at a key's first hit), then`,
    `${LIMIT} requests at once at t0 + ${(0.95 * windowMs) / 1000} s and ${LIMIT} more at t0 + ${(1.05 * windowMs) / 1000} s.`,
    '',
    ...table(burst),
    '',
    `A fixed window forgets the first ${LIMIT} at its boundary and admits ${LIMIT} more ${(0.1 * windowMs) / 1000} s later; a sliding log still counts them.`,
    '',
    `**Fleet.** ${FLEET} processes (child processes, each serving the limiter and sending to itself), one key,`,
    `${PER_PROCESS} requests a second each at a steady rate (${(FLEET * PER_PROCESS * windowMs) / 1000 / LIMIT}x the limit), for ${durationMs / 1000} s.`,
    '',
    ...table(fleetRows),
    '',
    'A fixed window spends its quota in a burst as it opens, a window (and the gap to the next request) after the',
    'last one opened: at a perfectly steady rate that puts no more than the limit in any window, so the excess',
    'here is as large as the arrivals clump (event-loop stalls, five processes on two cores) and varies by run.',
    '',
    'Bases: fleetlimit rows count each admission at its store decision, on the Redis server clock (the',
    "script's `TIME`), and a lease's local admissions on the process clock (the same machine's clock). The",
    'peers do not expose their decision times: their rows count the moment the handler behind the middleware',
    'ran, just after the decision. Most admitted in any window counts over every interval (t - window, t].',
    '"On handler times" is the same count for every row from the moment its handler ran: it can read a few above',
    'the decisions, as a handler runs a varying moment after its decision and a sliding log admits in bursts',
    'when a burst of earlier admissions leaves the window.',
    'The round-trip lower bound uses only what a client sees: requests admitted (200) that were sent at or after',
    'some a and whose response ended before a + window, so their decision certainly lies in [a, a + window);',
    'no limiter admitted fewer than that in one window.',
    '',
  ].join('\n')
  return {
    title: 'Accuracy: the most admissions in any window, fleetlimit against the popular Redis limiters',
    markdown,
    data: {
      limit: LIMIT,
      windowMs,
      fleetLoad: { processes: FLEET, perProcess: PER_PROCESS, durationMs },
      burst,
      fleet: fleetRows,
    },
    charts: {
      admissions: lineChart({
        title: `Boundary burst: admissions in the preceding ${seconds}, limit ${LIMIT} per ${seconds}`,
        xLabel: 'ms after the first request',
        yLabel: `admissions in the preceding ${seconds}`,
        series,
        hLines: [{ y: LIMIT, label: `limit ${LIMIT}` }],
      }),
    },
  }
}
