// One key's queue of acquire() waiters: its state, its head, the waits its last denials say, and its next batch.
import { RateLimitTimeoutError } from '../common/errors.js'
import { startTimer, type Timer } from '../common/timer.js'
import type { Decision } from './decision.js'

export interface Waiter {
  readonly cost: number
  readonly costs: readonly number[] | undefined
  readonly deadline: number
  readonly maxWaitMs: number
  settled: boolean
  resolve(decision: Decision): void
  reject(error: unknown): void
  timer?: Timer
  cleanup?: () => void
}

/**
 * A denial seen in the last batch: `cost` does not fit until `until` (local time), and surely not before `firm`
 * (the same, unless the wait includes a slot's expiry, which a release may beat).
 */
export interface Denial {
  readonly cost: number
  readonly until: number
  readonly firm: number
}

export interface KeyQueue<T> {
  readonly target: T
  /** First-in first-out; settled waiters are dropped lazily (from the front, or by compaction). */
  waiters: Waiter[]
  /** Unsettled waiters: what maxQueue bounds. */
  live: number
  /** Units known to be left after the last batch (undefined when unknown): how large the next batch may be. */
  budget: number | undefined
  denials: Denial[]
  /** When the sleeping queue asks again (0 while it is not sleeping), and how to wake it early. */
  wakeAt: number
  /** Before then no waiter can be admitted (0 while it is not sleeping): what deadlines are held against. */
  firmAt: number
  wake: (() => void) | undefined
  /** Counts wake() calls: a batch's denials made before the last one are stale. */
  freed: number
}

// The most decisions asked for at once on one key: bounds the burst a hot key sends to the store, and the
// denials wasted when another process used the room the last decision reported.
export const MAX_BATCH = 64

/** Local time, in ms: what deadlines, waits and wakes are measured in. */
export const now = () => performance.now()

/** Settles a waiter once: its timer and abort watch end, then `finish` answers it. */
export function settle<T>(queue: KeyQueue<T>, waiter: Waiter, finish: () => void): void {
  if (waiter.settled) return
  waiter.settled = true
  queue.live--
  waiter.timer?.cancel()
  waiter.cleanup?.()
  finish()
}

/** Rejects a waiter whose deadline falls before the wait, naming the wait. */
export function timeOut<T>(queue: KeyQueue<T>, waiter: Waiter, retryAfterMs: number): void {
  const error = new RateLimitTimeoutError(Math.max(0, Math.ceil(retryAfterMs)), waiter.maxWaitMs)
  settle(queue, waiter, () => waiter.reject(error))
}

/** Settles a waiter for a reason of its own (deadline, abort); a sleeping queue then looks at its new head. */
export function leave<T>(queue: KeyQueue<T>, waiter: Waiter, finish: () => void): void {
  const wasHead = head(queue) === waiter
  settle(queue, waiter, finish)
  if (queue.wake && (wasHead || queue.live === 0)) queue.wake()
}

/** The first waiter not settled, once the settled ones before it are dropped. */
export function head<T>(queue: KeyQueue<T>): Waiter | undefined {
  while (queue.waiters[0]?.settled) queue.waiters.shift()
  return queue.waiters[0]
}

/** The earliest waiter not settled that `fits`. */
export function firstLive<T>(queue: KeyQueue<T>, fits: (waiter: Waiter) => boolean): Waiter | undefined {
  for (const waiter of queue.waiters) if (!waiter.settled && fits(waiter)) return waiter
  return undefined
}

/**
 * When `cost` may fit, from the last batch's denials, and before when it surely does not; undefined when none
 * says.
 */
export function knownUntil<T>(queue: KeyQueue<T>, cost: number): { until: number; firm: number } | undefined {
  let known: { until: number; firm: number } | undefined
  // A denial of a smaller or equal cost is a lower bound for this one; a larger cost's says nothing.
  for (const denial of queue.denials) {
    if (denial.cost > cost) continue
    if (known === undefined) known = { until: denial.until, firm: denial.firm }
    else known = { until: Math.max(known.until, denial.until), firm: Math.max(known.firm, denial.firm) }
  }
  return known
}

/** The best known wait for a waiter that gives up now, in ms. */
export function knownWait<T>(queue: KeyQueue<T>, waiter: Waiter): number {
  const until = Math.max(queue.wakeAt, knownUntil(queue, waiter.cost)?.until ?? 0)
  return Math.max(0, until - now())
}

/**
 * When the head may ask again, or undefined to ask now. Rejects the waiters that this wait puts past their
 * deadline: the head first, since a later head with a smaller cost may be admitted sooner.
 */
export function nextAsk<T>(queue: KeyQueue<T>): number | undefined {
  for (let first = head(queue); first; first = head(queue)) {
    const known = knownUntil(queue, first.cost)
    if (known === undefined) return undefined
    const { until, firm } = known
    const at = now()
    if (first.deadline < firm) {
      timeOut(queue, first, until - at)
      continue
    }
    // Nobody overtakes the head, so no waiter is admitted before it.
    for (const waiter of queue.waiters)
      if (!waiter.settled && waiter.deadline < firm) timeOut(queue, waiter, until - at)
    queue.firmAt = firm
    return until
  }
  return undefined
}

/** Resolves true when woken early (a waiter left), false at `until`. */
export function sleep<T>(queue: KeyQueue<T>, until: number): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (early: boolean) => {
      timer.cancel()
      queue.wakeAt = 0
      queue.firmAt = 0
      queue.wake = undefined
      resolve(early)
    }
    const timer = startTimer(() => done(false), until - now())
    queue.wakeAt = until
    queue.wake = () => done(true)
  })
}

/** The next waiters to ask together: the head alone unless the known room fits more, in order. */
export function batch<T>(queue: KeyQueue<T>, first: Waiter): Waiter[] {
  const { budget } = queue
  if (budget === undefined || first.cost > budget) return [first]
  const chosen: Waiter[] = []
  let units = 0
  for (const waiter of queue.waiters) {
    if (waiter.settled) continue
    // Stops at the first cost that does not fit: a later, cheaper waiter never overtakes it.
    if (units + waiter.cost > budget || chosen.length === MAX_BATCH) break
    units += waiter.cost
    chosen.push(waiter)
  }
  return chosen
}
