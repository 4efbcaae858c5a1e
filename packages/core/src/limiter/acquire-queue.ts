import { createAbortWatch } from '../common/abort-watch.js'
import { QueueFullError, RateLimitTimeoutError } from '../common/errors.js'
import { startTimer, type Timer } from '../common/timer.js'
import type { Decision } from './decision.js'

/**
 * Waits for `target` (the store keys of one call), queued under `queueKey`. `costs`: the call's cost in each
 * window when they differ (`cost` is then the largest, which orders the queue).
 */
export type Acquire<T> = (
  queueKey: string,
  target: T,
  cost: number,
  maxWaitMs: number,
  signal?: AbortSignal,
  costs?: readonly number[],
) => Promise<Decision>

export interface AcquireQueue<T> {
  readonly acquire: Acquire<T>
  /**
   * Room may have been freed on the queue's keys (a slot released): a sleeping queue asks again now, and one that
   * is asking asks again once its answers are in, whatever they said.
   */
  wake(queueKey: string): void
}

interface Waiter {
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
interface Denial {
  readonly cost: number
  readonly until: number
  readonly firm: number
}

interface KeyQueue<T> {
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

type Outcome = { readonly decision: Decision } | { readonly error: unknown }

// The most decisions asked for at once on one key: bounds the burst a hot key sends to the store, and the
// denials wasted when another process used the room the last decision reported.
const MAX_BATCH = 64

const now = () => performance.now()

/**
 * First-in first-out waiting per key, within this process, at most `maxQueue` waiters per key. The head
 * asks the store alone; once admitted, the waiters after it whose costs fit in the reported `remaining` are
 * asked for together, so a key with room serves many waiters per round trip. A denial puts the queue to
 * sleep exactly `retryAfterMs` (no polling), so a freed slot goes to one waiter instead of every waiter
 * racing for it. `maxWaitMs` is a hard deadline, kept by a timer per waiter, and a waiter whose deadline
 * falls before the known wait is rejected at once.
 */
export function createAcquireQueue<T>(
  decide: (target: T, cost: number, costs: readonly number[] | undefined) => Promise<Decision>,
  options: {
    readonly maxQueue: number
    readonly refund: (decision: Decision) => void
    /**
     * The part of a denial's wait that nothing shortens: all of it (the default) for a rate, none of a wait until
     * an in-flight slot expires, since a release may come first.
     */
    readonly firmWait?: (decision: Decision) => number
    /** A queue is made for a key's first waiter, and dropped once it has none left. */
    readonly onStart?: (queueKey: string, target: T) => void
    readonly onIdle?: (queueKey: string) => void
  },
): AcquireQueue<T> {
  const { maxQueue, refund, onStart, onIdle, firmWait = (d: Decision) => d.retryAfterMs } = options
  const queues = new Map<string, KeyQueue<T>>()
  const watchAbort = createAbortWatch()

  function settle(queue: KeyQueue<T>, waiter: Waiter, finish: () => void): void {
    if (waiter.settled) return
    waiter.settled = true
    queue.live--
    waiter.timer?.cancel()
    waiter.cleanup?.()
    finish()
  }

  function timeOut(queue: KeyQueue<T>, waiter: Waiter, retryAfterMs: number): void {
    const error = new RateLimitTimeoutError(Math.max(0, Math.ceil(retryAfterMs)), waiter.maxWaitMs)
    settle(queue, waiter, () => waiter.reject(error))
  }

  /** Settles a waiter for a reason of its own (deadline, abort); a sleeping queue then looks at its new head. */
  function leave(queue: KeyQueue<T>, waiter: Waiter, finish: () => void): void {
    const wasHead = head(queue) === waiter
    settle(queue, waiter, finish)
    if (queue.wake && (wasHead || queue.live === 0)) queue.wake()
  }

  function head(queue: KeyQueue<T>): Waiter | undefined {
    while (queue.waiters[0]?.settled) queue.waiters.shift()
    return queue.waiters[0]
  }

  function firstLive(queue: KeyQueue<T>, fits: (waiter: Waiter) => boolean): Waiter | undefined {
    for (const waiter of queue.waiters) if (!waiter.settled && fits(waiter)) return waiter
    return undefined
  }

  /**
   * When `cost` may fit, from the last batch's denials, and before when it surely does not; undefined when none
   * says.
   */
  function knownUntil(queue: KeyQueue<T>, cost: number): { until: number; firm: number } | undefined {
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
  function knownWait(queue: KeyQueue<T>, waiter: Waiter): number {
    const until = Math.max(queue.wakeAt, knownUntil(queue, waiter.cost)?.until ?? 0)
    return Math.max(0, until - now())
  }

  /**
   * When the head may ask again, or undefined to ask now. Rejects the waiters that this wait puts past their
   * deadline: the head first, since a later head with a smaller cost may be admitted sooner.
   */
  function nextAsk(queue: KeyQueue<T>): number | undefined {
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
  function sleep(queue: KeyQueue<T>, until: number): Promise<boolean> {
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
  function batch(queue: KeyQueue<T>, first: Waiter): Waiter[] {
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

  /**
   * An admission goes to the earliest waiter of the same cost, so a waiter denied in this batch keeps its
   * place before a later one the store happened to admit. An admission whose waiter already left (deadline,
   * abort) goes to the earliest waiter it covers (cost the same or smaller); one that no waiter takes is refunded,
   * so a caller that gave up leaves no units behind.
   */
  function grant(queue: KeyQueue<T>, owner: Waiter, decision: Decision): void {
    const to = owner.settled
      ? firstLive(queue, (waiter) => waiter.cost <= owner.cost)
      : firstLive(queue, (waiter) => waiter.cost === owner.cost)
    if (to) settle(queue, to, () => to.resolve(decision))
    else refund(decision)
  }

  /** Asks for every waiter of `chosen` at once; outcomes are applied in queue order, whatever order they come in. */
  function ask(queue: KeyQueue<T>, chosen: readonly Waiter[]): Promise<void> {
    const outcomes: (Outcome | undefined)[] = chosen.map(() => undefined)
    const denials: Denial[] = []
    let remaining = Number.POSITIVE_INFINITY
    let applied = 0
    const freed = queue.freed
    return new Promise((done) => {
      const apply = (waiter: Waiter, outcome: Outcome) => {
        if ('error' in outcome) {
          // A waiter that already left has its answer; the error is for nobody.
          settle(queue, waiter, () => waiter.reject(outcome.error))
        } else if (outcome.decision.allowed) {
          remaining = Math.min(remaining, outcome.decision.remaining)
          grant(queue, waiter, outcome.decision)
        } else {
          const at = now()
          denials.push({
            cost: waiter.cost,
            until: at + outcome.decision.retryAfterMs,
            firm: at + firmWait(outcome.decision),
          })
        }
      }
      const arrive = (index: number, outcome: Outcome) => {
        outcomes[index] = outcome
        for (let next = outcomes[applied]; next; next = outcomes[applied]) apply(chosen[applied++] as Waiter, next)
        if (applied < chosen.length) return
        // Room freed while these were asked for may have come after the store's answers: ask again.
        queue.denials = queue.freed === freed ? denials : []
        // After a denial the room left is unknown for a smaller cost: the head asks alone.
        queue.budget = denials.length > 0 || remaining === Number.POSITIVE_INFINITY ? undefined : remaining
        done()
      }
      chosen.forEach((waiter, index) => {
        // The executor turns a synchronous throw into a rejection.
        new Promise<Decision>((resolve) => resolve(decide(queue.target, waiter.cost, waiter.costs))).then(
          (decision) => arrive(index, { decision }),
          (error: unknown) => arrive(index, { error }),
        )
      })
    })
  }

  async function pump(queueKey: string, queue: KeyQueue<T>): Promise<void> {
    for (;;) {
      const until = nextAsk(queue)
      if (until !== undefined) {
        // Woken early, the new head's wait is worked out again from the same denials.
        if (await sleep(queue, until)) continue
        queue.denials = []
        queue.budget = undefined
      }
      const first = head(queue)
      if (!first) break
      await ask(queue, batch(queue, first))
    }
    queues.delete(queueKey)
    onIdle?.(queueKey)
  }

  function wake(queueKey: string): void {
    const queue = queues.get(queueKey)
    if (!queue) return
    queue.freed++
    queue.denials = []
    queue.budget = undefined
    queue.wake?.()
  }

  const acquire: Acquire<T> = (queueKey, target, cost, maxWaitMs, signal, costs) =>
    new Promise<Decision>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason)
        return
      }
      const at = now()
      const deadline = at + maxWaitMs
      let queue = queues.get(queueKey)
      if (queue && queue.firmAt > 0 && deadline < queue.firmAt) {
        reject(new RateLimitTimeoutError(Math.ceil(queue.wakeAt - at), maxWaitMs))
        return
      }
      if (queue && queue.live >= maxQueue) {
        reject(new QueueFullError(queue.live, maxQueue))
        return
      }
      const idle = queue === undefined
      if (!queue) {
        queue = {
          target,
          waiters: [],
          live: 0,
          budget: undefined,
          denials: [],
          wakeAt: 0,
          firmAt: 0,
          wake: undefined,
          freed: 0,
        }
        queues.set(queueKey, queue)
        onStart?.(queueKey, target)
      }
      const owner = queue
      const waiter: Waiter = { cost, costs, deadline, maxWaitMs, settled: false, resolve, reject }
      if (Number.isFinite(maxWaitMs)) {
        const expire = () => {
          // A wake due at this same instant goes first: a wait ending exactly at the deadline is within it.
          if (owner.wakeAt > 0 && owner.wakeAt <= now()) {
            waiter.timer = startTimer(expire, 0)
            return
          }
          leave(owner, waiter, () => reject(new RateLimitTimeoutError(Math.ceil(knownWait(owner, waiter)), maxWaitMs)))
        }
        waiter.timer = startTimer(expire, maxWaitMs)
      }
      if (signal) {
        waiter.cleanup = watchAbort(signal, () => leave(owner, waiter, () => reject(signal.reason)))
      }
      // Waiters that left behind the head stay in the array until it reaches them: compact now and then.
      if (queue.waiters.length > 2 * queue.live + 64) queue.waiters = queue.waiters.filter((w) => !w.settled)
      queue.waiters.push(waiter)
      queue.live++
      if (idle) void pump(queueKey, queue)
    })

  return { acquire, wake }
}
