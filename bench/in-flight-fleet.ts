// The in-flight scenario, measured by the upstream rather than by the limiter: `workers` processes, each with
// `tasksPerWorker` tasks queued at once, every task one call to the stub upstream holding for its turn in a
// fixed seeded sequence of 20-200 ms (so every limiter gets the same work). The upstream enforces the fleet's
// limits (calls in flight, calls per window) and measures what arrived; a task answered 429 waits Retry-After
// and calls again through the limiter. Used by the bench's in-flight part and by tests.
import { fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { startUpstream, type UpstreamStats } from '../examples/llm-gateway/upstream.js'
import type { InFlightPeer } from './in-flight-peers.js'
import type { WorkerConfig, WorkerMessage, WorkerReport } from './in-flight-worker.js'
import { reply, runWorkers } from './worker-fleet.js'

export interface InFlightScenario {
  readonly workers: number
  readonly tasksPerWorker: number
  /** Calls in flight at once, fleet-wide. */
  readonly concurrency: number
  /** Calls started in any window of windowMs, fleet-wide. */
  readonly limit: number
  readonly windowMs: number
  /** The seed of the holds' sequence. */
  readonly seed: number
  /** Calls a task makes at most (the first and its retries after 429) before it counts as failed. */
  readonly maxAttempts: number
  /** Tasks not done by then count as unfinished. */
  readonly deadlineMs: number
}

/**
 * The scenario: 4 processes × 50 tasks, 5 in flight. The rate, 100 calls per 5 s, matters alongside:
 * 5 in flight would start about 45 calls a second (holds average 110 ms), so the 101st call must wait for the
 * first to leave the window. Five seconds is the finest window Bottleneck's clustering mode documents.
 */
export const IN_FLIGHT_SCENARIO: InFlightScenario = {
  workers: 4,
  tasksPerWorker: 50,
  concurrency: 5,
  limit: 100,
  windowMs: 5_000,
  seed: 32,
  maxAttempts: 5,
  deadlineMs: 120_000,
}

export interface InFlightResult {
  readonly limiter: string
  readonly name: string
  readonly enforces: string
  /** The upstream's own counts: the most in flight and per window, 429s, totals. */
  readonly stats: UpstreamStats
  readonly tasks: number
  readonly completed: number
  readonly failed: number
  readonly unfinished: number
  /** From the common start to the last task's end, on the processes' shared wall clock. */
  readonly wallMs: number
  /** Calls answered 429, as the tasks saw them. */
  readonly refusals: number
  /** Each distinct error message (a failed setup, a task's call, an 'error' event) and how often it came. */
  readonly errors: Readonly<Record<string, number>>
}

/** 20-200 ms, from a seeded generator (mulberry32): the same sequence on every run. */
export function seededHolds(seed: number, count: number): number[] {
  let state = seed >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
  return Array.from({ length: count }, () => 20 + Math.floor(next() * 181))
}

/**
 * The time a perfect limiter takes: each call started, in the order the workers' queues interleave, at the
 * first moment a slot is free and fewer than `limit` calls started in the window before; no network time.
 */
export function perfectScheduleMs(holds: readonly number[], scenario: InFlightScenario): number {
  const { workers, tasksPerWorker, concurrency, limit, windowMs } = scenario
  const slots = Array.from({ length: concurrency }, () => 0)
  const starts: number[] = []
  let end = 0
  for (let i = 0; i < tasksPerWorker; i++) {
    for (let w = 0; w < workers; w++) {
      const free = Math.min(...slots)
      const start = starts.length >= limit ? Math.max(free, (starts[starts.length - limit] as number) + windowMs) : free
      const hold = holds[w * tasksPerWorker + i] as number
      starts.push(start)
      slots[slots.indexOf(free)] = start + hold
      end = Math.max(end, start + hold)
    }
  }
  return end
}

/** Runs the scenario once with one limiter against a fresh stub upstream, on the Redis at redisUrl. */
export async function measureInFlight(
  peer: InFlightPeer,
  redisUrl: string,
  scenario: InFlightScenario = IN_FLIGHT_SCENARIO,
): Promise<InFlightResult> {
  const { workers: count, tasksPerWorker, concurrency, limit, windowMs, seed, maxAttempts, deadlineMs } = scenario
  const holds = seededHolds(seed, count * tasksPerWorker)
  const upstream = await startUpstream({
    requestsPerWindow: limit,
    unitsPerWindow: Number.POSITIVE_INFINITY,
    inFlight: concurrency,
    windowMs,
    cost: () => 1,
  })
  const key = `inflight-${peer.id}-${randomBytes(4).toString('hex')}`
  const workerPath = fileURLToPath(new URL('./in-flight-worker.ts', import.meta.url))
  const workers = Array.from({ length: count }, () =>
    fork(workerPath, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  )
  try {
    const ready = workers.map((child) => reply<WorkerMessage>(child))
    workers.forEach((child, w) => {
      const config: WorkerConfig = {
        module: peer.module,
        gate: { redisUrl, key, concurrency, limit, windowMs },
        upstreamUrl: upstream.url,
        holds: holds.slice(w * tasksPerWorker, (w + 1) * tasksPerWorker),
        maxAttempts,
      }
      child.send(config)
    })
    await Promise.all(ready)
    let startAt = 0
    const { reports, errors } = await runWorkers<WorkerReport>(
      workers,
      (at) => {
        startAt = at
        return { startAt, deadlineMs }
      },
      200,
    )
    const sum = (pick: (r: WorkerReport) => number) => reports.reduce((total, r) => total + pick(r), 0)
    const completed = sum((r) => r.completed)
    const failed = sum((r) => r.failed)
    return {
      limiter: peer.id,
      name: peer.name,
      enforces: peer.enforces,
      stats: upstream.stats(),
      tasks: holds.length,
      completed,
      failed,
      unfinished: holds.length - completed - failed,
      wallMs: Math.max(...reports.map((r) => r.endedAt)) - startAt,
      refusals: sum((r) => r.refusals),
      errors,
    }
  } finally {
    for (const child of workers) if (child.exitCode === null) child.kill()
    await upstream.close()
  }
}
