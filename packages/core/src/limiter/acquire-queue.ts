import { createAbortWatch } from '../common/abort-watch.js'
import { QueueFullError, RateLimitTimeoutError } from '../common/errors.js'
import { startTimer } from '../common/timer.js'
import type { Decision } from './decision.js'
import {
  batch,
  type Denial,
  firstLive,
  head,
  type KeyQueue,
  knownWait,
  leave,
  nextAsk,
  now,
  settle,
  sleep,
  type Waiter,
} from './key-queue.js'

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

type Outcome = { readonly decision: Decision } | { readonly error: unknown }

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
    /** A batch was denied (and the queue goes to sleep on its waits): once per batch, with its denials. */
    readonly onDenied?: (target: T, denials: readonly Decision[]) => void
  },
): AcquireQueue<T> {
  const { maxQueue, refund, onStart, onIdle, onDenied, firmWait = (d: Decision) => d.retryAfterMs } = options
  const queues = new Map<string, KeyQueue<T>>()
  const watchAbort = createAbortWatch()

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
    const denied: Decision[] = []
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
          if (onDenied) denied.push(outcome.decision)
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
        if (denied.length > 0) onDenied?.(queue.target, denied)
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
