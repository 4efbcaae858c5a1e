import { fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import type { LimiterStats, LocalOptions } from '@fleetlimit/core'
import { maxInWindow } from './recording-store.js'

export interface FleetWorkerConfig {
  readonly redisUrl: string
  /** Redis Cluster startup nodes: when set, the workers use a Cluster client instead of `redisUrl`. */
  readonly cluster: readonly { host: string; port: number }[] | undefined
  readonly prefix: string
  readonly key: string
  readonly limit: number
  readonly windowMs: number
  readonly durationMs: number
  readonly concurrency: number
  readonly skewMs: number
  readonly local: LocalOptions | false | undefined
  readonly timeoutMs: number
  /**
   * How calls are made: loops that sleep a denial's retryAfterMs ('retry') or call again at once ('hammer'),
   * or a steady number of calls per second whatever the answers.
   */
  readonly pace: 'retry' | 'hammer' | number
}

export interface FleetOptions {
  readonly redisUrl: string
  readonly cluster?: readonly { host: string; port: number }[]
  readonly limit: number
  readonly windowMs: number
  readonly durationMs: number
  /** One worker process per entry: the shift of its Date.now(), in ms. */
  readonly skewsMs: readonly number[]
  readonly concurrency?: number
  readonly local?: LocalOptions | false
  readonly pace?: 'retry' | 'hammer' | number
  /** The policy's store deadline. Default 100 ms. */
  readonly timeoutMs?: number
}

export interface FleetReport {
  /** Server times (ms) of every admission, all workers merged, sorted. */
  readonly admissions: number[]
  readonly perWorker: number[]
  readonly calls: number
  /** Calls that threw (a store failure on a fail-closed policy). */
  readonly errors: number
  /** Every worker's limiter stats, summed. */
  readonly stats: Record<keyof LimiterStats, number>
  readonly maxInWindow: number
  /** The same over windows 5 ms shorter: for admissions noted on a client's clock a moment after the fact. */
  readonly maxInWindow5msShort: number
  /** Admissions in the whole windows that followed the first admission, and the most a limiter may admit there. */
  readonly inWholeWindows: number
  readonly idealInWholeWindows: number
}

/** Starts one worker process per skew, all on one key of one Redis, and merges what they were admitted. */
export async function runFleet(options: FleetOptions): Promise<FleetReport> {
  const tag = randomBytes(4).toString('hex')
  const base = {
    redisUrl: options.redisUrl,
    cluster: options.cluster,
    prefix: `fleetdemo-${tag}`,
    key: 'shared-upstream',
    limit: options.limit,
    windowMs: options.windowMs,
    durationMs: options.durationMs,
    concurrency: options.concurrency ?? 2,
    local: options.local,
    pace: options.pace ?? 'retry',
    timeoutMs: options.timeoutMs ?? 100,
  }
  const workerPath = fileURLToPath(new URL('./fleet-worker.ts', import.meta.url))
  const workers = options.skewsMs.map((skewMs) => {
    const child = fork(workerPath, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    child.send({ ...base, skewMs } satisfies FleetWorkerConfig)
    return child
  })
  try {
    // Start together, once every worker is connected; a worker that dies first fails the run.
    await Promise.all(
      workers.map(
        (child) =>
          new Promise((resolve, reject) => {
            child.once('message', resolve)
            child.once('exit', (code) => reject(new Error(`fleet worker exited with ${code} before it was ready`)))
          }),
      ),
    )
    for (const child of workers) child.removeAllListeners('exit')
    const results = workers.map(
      (child) =>
        new Promise<{ admissions: number[]; calls: number; errors: number; stats: LimiterStats }>((resolve, reject) => {
          child.once('message', resolve)
          child.once('exit', (code) => reject(new Error(`fleet worker exited with ${code} before reporting`)))
        }),
    )
    for (const child of workers) child.send('go')
    const reports = await Promise.all(results)

    const admissions = reports.flatMap((r) => r.admissions).sort((a, b) => a - b)
    const windows = Math.floor(options.durationMs / options.windowMs)
    const first = admissions[0] ?? 0
    return {
      admissions,
      perWorker: reports.map((r) => r.admissions.length),
      calls: reports.reduce((sum, r) => sum + r.calls, 0),
      errors: reports.reduce((sum, r) => sum + r.errors, 0),
      stats: sumStats(reports.map((r) => r.stats)),
      maxInWindow: maxInWindow(admissions, options.windowMs),
      maxInWindow5msShort: maxInWindow(admissions, options.windowMs - 5),
      inWholeWindows: admissions.filter((t) => t < first + windows * options.windowMs).length,
      idealInWholeWindows: windows * options.limit,
    }
  } finally {
    for (const child of workers) if (child.exitCode === null) child.kill()
  }
}

function sumStats(all: readonly LimiterStats[]): Record<keyof LimiterStats, number> {
  const sum = {} as Record<keyof LimiterStats, number>
  for (const stats of all) {
    for (const [name, value] of Object.entries(stats) as [keyof LimiterStats, number][])
      sum[name] = (sum[name] ?? 0) + value
  }
  return sum
}
