import { type ChildProcess, fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { type Arrival, startUpstream, type Upstream } from './upstream.js'
import type { WorkerConfig, WorkerMessage } from './worker.js'

export interface OutboundExampleOptions {
  /** The Redis the workers share. Default: a redis-server started for the run, and stopped after it. */
  readonly redisUrl?: string
  /** Worker processes. Default 4. */
  readonly workers?: number
  /** How long the first and the last phase last, in ms. Default 3000. */
  readonly phaseMs?: number
  /** Where the report's lines go. Default: console.log. */
  readonly log?: (line: string) => void
}

export interface PhaseReport {
  readonly name: string
  /** Requests that reached the upstream, per worker (worker 1 first). */
  readonly sentByWorker: readonly number[]
  /** The upstream's answers: 200s, and 429s. */
  readonly ok: number
  readonly limited: number
}

export interface OutboundReport {
  readonly quota: { readonly limit: number; readonly windowMs: number }
  readonly phases: readonly [PhaseReport, PhaseReport, PhaseReport]
  /** Every limiter.pause() a worker made: who, for how long, and when (ms since the run began). */
  readonly pauses: readonly { readonly worker: number; readonly ms: number; readonly atMs: number }[]
  /** The time from the first 429 to the next request that reached the upstream, in ms. */
  readonly quietAfter429Ms: number | undefined
  /** Calls in the workers that failed (the stop's aborts not counted). */
  readonly errors: number
  /** Whether every expectation held. */
  readonly passed: boolean
}

// The upstream's quota, and the fleet's: the same limit and window. limitedFetch counts each request 100 ms
// beyond the window (transitMs), for the time between the limiter's admission and the upstream's count of it.
const QUOTA = 20
const UPSTREAM_WINDOW_MS = 1_000
const FLEET_WINDOW_MS = 1_000
// How long the upstream refuses everything once it turns strict, and says so in Retry-After.
const STRICT_SECONDS = 2

/**
 * Four processes (by default) call one upstream through limitedFetch as fast as they can, sharing one limiter
 * through Redis: while fleetlimit holds the quota the upstream answers no 429; when the upstream turns
 * strict, the first 429's Retry-After pauses the whole fleet, and the upstream sees nothing until it is over.
 *
 * @example
 * ```ts
 * const report = await runExample({ redisUrl: 'redis://127.0.0.1:6379', phaseMs: 1_000 })
 * console.log(report.phases.map((p) => p.limited)) // [0, 1, 0]
 * ```
 */
export async function runExample(options: OutboundExampleOptions = {}): Promise<OutboundReport> {
  const log = options.log ?? console.log
  const workerCount = options.workers ?? 4
  const phaseMs = options.phaseMs ?? 3_000
  // The strict phase holds the wait for the next request, the pause, and some traffic after it.
  const strictMs = Math.max(phaseMs, FLEET_WINDOW_MS + STRICT_SECONDS * 1_000 + 1_000)

  // A server of the run's own unless one is given: stopped after the run.
  const { redisUrl, server } =
    options.redisUrl === undefined
      ? await startRedisServer().then((started) => ({ redisUrl: started.url, server: started }))
      : { redisUrl: options.redisUrl, server: undefined }
  let upstream: Upstream | undefined
  const workers: ChildProcess[] = []
  try {
    const api = await startUpstream({ quota: QUOTA, windowMs: UPSTREAM_WINDOW_MS })
    upstream = api
    log(
      `${workerCount} workers call one upstream that allows ${QUOTA} requests per ${UPSTREAM_WINDOW_MS / 1_000} s ` +
        `(sliding); they share one fleetlimit limiter (${QUOTA} per ${FLEET_WINDOW_MS / 1_000} s) through Redis ` +
        `at ${redisUrl}`,
    )
    const base = {
      redisUrl,
      prefix: `fleetlimit-outbound-${randomBytes(4).toString('hex')}`,
      upstreamUrl: api.url,
      limit: QUOTA,
      windowMs: FLEET_WINDOW_MS,
    }
    const workerPath = fileURLToPath(new URL('./worker.ts', import.meta.url))
    const pauses: { worker: number; ms: number; atMs: number }[] = []
    const done: Extract<WorkerMessage, { type: 'done' }>[] = []
    let started = 0
    // Until when the fleet is known to be paused (ms since the run began): a pause() within it adds nothing new.
    let pausedUntil = 0
    const ready = Array.from({ length: workerCount }, (_, i) => {
      const child = fork(workerPath, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
      workers.push(child)
      child.send({ ...base, worker: i + 1 } satisfies WorkerConfig)
      return new Promise<void>((resolve, reject) => {
        child.on('message', (message: WorkerMessage) => {
          if (message.type === 'ready') resolve()
          else if (message.type === 'done') done.push(message)
          else if (message.type === 'pause') {
            const atMs = performance.now() - started
            pauses.push({ worker: message.worker, ms: message.ms, atMs })
            // Workers whose requests were in flight at the same instant pause too: one line says it.
            if (atMs >= pausedUntil) {
              log(
                `  +${seconds(atMs)}  fleet-wide pause: worker ${message.worker} got a 429 with Retry-After and ` +
                  `called limiter.pause(key, ${message.ms}): every worker now waits ${message.ms} ms`,
              )
            }
            pausedUntil = Math.max(pausedUntil, atMs + message.ms)
          }
        })
        child.once('exit', (code) => reject(new Error(`worker ${i + 1} exited with ${code} before it was ready`)))
      })
    })
    await Promise.all(ready)
    for (const child of workers) child.removeAllListeners('exit')
    const exited = workers.map((child) => once(child, 'exit'))

    const reports: PhaseReport[] = []
    const phase = async (name: string, ms: number) => {
      const from = performance.now()
      log(`\nphase ${reports.length + 1} (${seconds(from - started)}): ${name}`)
      await sleep(ms)
      const to = performance.now()
      // Requests are logged as they arrive: every one that arrived before `to` is in.
      const report = phaseReport(name, api.arrivals, from, to, workerCount)
      reports.push(report)
      log(`  sent by worker: ${report.sentByWorker.map((n, w) => `${w + 1}: ${n}`).join(', ')}`)
      log(`  upstream answered 200: ${report.ok}, 429: ${report.limited}`)
    }
    started = performance.now()
    for (const child of workers) child.send('go')
    await phase('fleetlimit holds the quota', phaseMs)
    api.tighten(STRICT_SECONDS)
    const strictFrom = performance.now()
    await phase(
      `the upstream turns strict: its next answer is 429 with Retry-After: ${STRICT_SECONDS}, and it refuses ` +
        `everything for ${STRICT_SECONDS} s`,
      strictMs,
    )
    const quietAfter429Ms = quietAfterFirst429(api.arrivals, strictFrom)
    const strictPauses = pauses.filter((p) => p.atMs >= strictFrom - started)
    if (strictPauses.length > 1) {
      const by = strictPauses.map((p) => p.worker).join(', ')
      log(`  pause() calls: ${strictPauses.length}, by workers ${by} (their requests were in flight together)`)
    }
    if (quietAfter429Ms !== undefined) {
      log(`  no request reached the upstream for ${seconds(quietAfter429Ms)} after its first 429`)
    }
    await phase('after the pause', phaseMs)
    for (const child of workers) child.send('stop')
    const exits = await Promise.all(exited)

    const [first, strict, last] = reports as [PhaseReport, PhaseReport, PhaseReport]
    const errors = done.reduce((sum, d) => sum + d.errors, 0)
    log('')
    let passed = true
    const check = (ok: boolean, text: string) => {
      passed &&= ok
      log(`  ${ok ? 'ok  ' : 'FAIL'} ${text}`)
    }
    check(first.limited === 0, `phase 1: ${first.limited} 429s (expected none: the fleet kept to the quota)`)
    check(
      strict.limited >= 1 && strict.limited <= workerCount && strictPauses.length >= 1,
      `phase 2: ${strict.limited} 429s (expected 1 to ${workerCount}: one per worker with a request in flight at ` +
        `that instant), then a fleet-wide pause`,
    )
    check(last.limited === 0, `phase 3: ${last.limited} 429s (expected none)`)
    const clean = exits.filter(([code]) => code === 0).length
    check(
      errors === 0 && clean === workerCount && done.length === workerCount,
      `workers: ${clean} of ${workerCount} reported and exited cleanly; calls that failed: ${errors}`,
    )
    return {
      quota: { limit: QUOTA, windowMs: UPSTREAM_WINDOW_MS },
      phases: [first, strict, last],
      pauses,
      quietAfter429Ms,
      errors,
      passed,
    }
  } finally {
    for (const child of workers) if (child.exitCode === null && child.signalCode === null) child.kill()
    await upstream?.close()
    await server?.stop()
  }
}

function phaseReport(name: string, arrivals: readonly Arrival[], from: number, to: number, workers: number) {
  const inPhase = arrivals.filter((a) => a.at >= from && a.at < to)
  return {
    name,
    sentByWorker: Array.from({ length: workers }, (_, i) => inPhase.filter((a) => a.worker === String(i + 1)).length),
    ok: inPhase.filter((a) => a.status === 200).length,
    limited: inPhase.filter((a) => a.status === 429).length,
  }
}

/** From the first 429 since `from` to the first request that arrived after the last 429 of that burst, in ms. */
function quietAfterFirst429(arrivals: readonly Arrival[], from: number): number | undefined {
  const first = arrivals.findIndex((a) => a.at >= from && a.status === 429)
  if (first < 0) return undefined
  let next = first
  while (arrivals[next]?.status === 429) next++
  const after = arrivals[next]
  return after && after.at - (arrivals[first] as Arrival).at
}

const seconds = (ms: number) => `${(ms / 1_000).toFixed(2)} s`
