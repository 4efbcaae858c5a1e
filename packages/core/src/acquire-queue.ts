import type { Decision } from './decision.js'
import { RateLimitTimeoutError } from './errors.js'

/** Waits for `target` (the store keys of one call), queued under `queueKey`. */
export type Acquire<T> = (
  queueKey: string,
  target: T,
  cost: number,
  maxWaitMs: number,
  signal?: AbortSignal,
) => Promise<Decision>

interface Waiter {
  readonly cost: number
  readonly deadline: number
  readonly maxWaitMs: number
  settled: boolean
  resolve(decision: Decision): void
  reject(error: unknown): void
  cleanup?: () => void
}

interface KeyQueue {
  readonly waiters: Waiter[]
  /** When the sleeping head retries (0 while it is not sleeping), and how to wake it early. */
  wakeAt: number
  wake: (() => void) | undefined
}

const now = () => performance.now()

/**
 * First-in first-out waiting per key, within this process. Only the head of a key's queue asks the store;
 * when denied it sleeps exactly `retryAfterMs` (no polling), so a freed slot goes to one waiter instead of
 * every waiter racing for it. A waiter whose deadline falls before the known wait is rejected at once.
 */
export function createAcquireQueue<T>(decide: (target: T, cost: number) => Promise<Decision>): Acquire<T> {
  const queues = new Map<string, KeyQueue>()

  function settle(waiter: Waiter, finish: () => void): void {
    if (waiter.settled) return
    waiter.settled = true
    waiter.cleanup?.()
    finish()
  }

  function timeOut(waiter: Waiter, retryAfterMs: number): void {
    settle(waiter, () => waiter.reject(new RateLimitTimeoutError(Math.ceil(retryAfterMs), waiter.maxWaitMs)))
  }

  function head(queue: KeyQueue): Waiter | undefined {
    while (queue.waiters[0]?.settled) queue.waiters.shift()
    return queue.waiters[0]
  }

  function sleep(queue: KeyQueue, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        queue.wakeAt = 0
        queue.wake = undefined
        resolve()
      }
      const timer = setTimeout(done, ms)
      queue.wakeAt = now() + ms
      queue.wake = done
    })
  }

  async function pump(queueKey: string, target: T, queue: KeyQueue): Promise<void> {
    for (let waiter = head(queue); waiter; waiter = head(queue)) {
      let decision: Decision
      try {
        decision = await decide(target, waiter.cost)
      } catch (error) {
        const failed = waiter
        settle(failed, () => failed.reject(error))
        continue
      }
      if (decision.allowed) {
        const admitted = waiter
        settle(admitted, () => admitted.resolve(decision))
        continue
      }
      const wait = decision.retryAfterMs
      const at = now()
      for (const queued of queue.waiters) {
        if (!queued.settled && queued.deadline < at + wait) timeOut(queued, wait)
      }
      if (!waiter.settled) await sleep(queue, wait)
    }
    queues.delete(queueKey)
  }

  return (queueKey, target, cost, maxWaitMs, signal) =>
    new Promise<Decision>((resolve, reject) => {
      if (signal?.aborted) {
        reject(signal.reason)
        return
      }
      const at = now()
      let queue = queues.get(queueKey)
      const idle = queue === undefined
      if (!queue) {
        queue = { waiters: [], wakeAt: 0, wake: undefined }
        queues.set(queueKey, queue)
      }
      const waiter: Waiter = { cost, deadline: at + maxWaitMs, maxWaitMs, settled: false, resolve, reject }
      if (queue.wakeAt > 0 && waiter.deadline < queue.wakeAt) {
        timeOut(waiter, queue.wakeAt - at)
        return
      }
      if (signal) {
        const owner = queue
        const onAbort = () => {
          const wasHead = head(owner) === waiter
          settle(waiter, () => reject(signal.reason))
          if (wasHead) owner.wake?.()
        }
        signal.addEventListener('abort', onAbort, { once: true })
        waiter.cleanup = () => signal.removeEventListener('abort', onAbort)
      }
      queue.waiters.push(waiter)
      if (idle) void pump(queueKey, target, queue)
    })
}
