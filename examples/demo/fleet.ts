import { fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { maxInWindow } from './recording-store.js'

export interface FleetWorkerConfig {
  readonly redisUrl: string
  readonly prefix: string
  readonly key: string
  readonly limit: number
  readonly windowMs: number
  readonly durationMs: number
  readonly concurrency: number
  readonly skewMs: number
}

export interface FleetOptions {
  readonly redisUrl: string
  readonly limit: number
  readonly windowMs: number
  readonly durationMs: number
  /** One worker process per entry: the shift of its Date.now(), in ms. */
  readonly skewsMs: readonly number[]
  readonly concurrency?: number
}

export interface FleetReport {
  /** Server times (ms) of every admission, all workers merged, sorted. */
  readonly admissions: number[]
  readonly perWorker: number[]
  readonly calls: number
  readonly maxInWindow: number
  /** Admissions in the whole windows that followed the first admission, and the most a limiter may admit there. */
  readonly inWholeWindows: number
  readonly idealInWholeWindows: number
}

/** Starts one worker process per skew, all on one key of one Redis, and merges what they were admitted. */
export async function runFleet(options: FleetOptions): Promise<FleetReport> {
  const tag = randomBytes(4).toString('hex')
  const base = {
    redisUrl: options.redisUrl,
    prefix: `fleetdemo-${tag}`,
    key: 'shared-upstream',
    limit: options.limit,
    windowMs: options.windowMs,
    durationMs: options.durationMs,
    concurrency: options.concurrency ?? 2,
  }
  const workerPath = fileURLToPath(new URL('./fleet-worker.ts', import.meta.url))
  const workers = options.skewsMs.map((skewMs) => {
    const child = fork(workerPath, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    child.send({ ...base, skewMs } satisfies FleetWorkerConfig)
    return child
  })
  try {
    // Start together, once every worker is connected.
    await Promise.all(workers.map((child) => once(child, 'message')))
    const results = workers.map(
      (child) =>
        new Promise<{ admissions: number[]; calls: number }>((resolve, reject) => {
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
      maxInWindow: maxInWindow(admissions, options.windowMs),
      inWholeWindows: admissions.filter((t) => t < first + windows * options.windowMs).length,
      idealInWholeWindows: windows * options.limit,
    }
  } finally {
    for (const child of workers) if (child.exitCode === null) child.kill()
  }
}
