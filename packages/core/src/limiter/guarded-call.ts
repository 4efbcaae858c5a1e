import { StoreError } from '../common/errors.js'
import { isServerFailure, replyCode } from '../store/server-failure.js'
import type { ServerGuard } from '../store/server-set.js'

/** The store did not answer within timeoutMs of the call being sent. */
export class DeadlineExceeded extends StoreError {}
/** The call was not sent: the server's breaker is open, or the client is disconnected. */
export class ShortCircuit extends StoreError {}

export type CallOutcome = 'ok' | 'error' | 'timeout'

/** When a store call's caller gives up: performance.now() time, which may move later (see sendWithin). */
export interface Deadline {
  readonly at: number
}

// A timer that runs this much later than due says that the event loop was busy, not the server slow.
const LATE_TIMER_MS = 10

/** The store's connection, as the guard sees it. */
export interface Connection {
  /** False while a call would only wait in the client for a lost connection. */
  connected(): boolean
  /**
   * When the connection last became ready (performance.now() time): +Infinity while the first connection is
   * being made, undefined while a lost one is.
   */
  readySince(): number | undefined
}

/**
 * Sends one store call under its server's guard. It is not sent while the breaker is open or the client is
 * disconnected; it waits for a free slot among the server's calls in flight; and its deadline runs from the
 * moment it is sent, so a burst queued in this process is never mistaken for a slow server. The breaker
 * counts only what says the server is unavailable (a lost connection, LOADING, …, or a missed deadline while
 * the server answered nothing else): an error reply about one key, or one slow call among answered ones, fails
 * that call alone.
 *
 * `call` receives the deadline so that the store can refuse to record after it.
 */
export async function guardedCall<T>(
  guard: ServerGuard | undefined,
  connection: Connection,
  timeoutMs: number,
  call: (deadline: Deadline) => Promise<T>,
  report?: (outcome: CallOutcome, durationMs: number) => void,
): Promise<T> {
  if (!guard) return sendWithin(call, timeoutMs, connection, performance.now(), report)
  const { breaker, gate } = guard
  if (!breaker.tryAcquire()) throw new ShortCircuit('the circuit breaker is open')
  const probe = breaker.state === 'half-open'
  if (!connection.connected()) {
    breaker.failure()
    throw new ShortCircuit('the store is not connected')
  }
  const waiting = gate.enter()
  if (waiting) {
    await waiting
    // The breaker may have opened while this call waited: the calls ahead of it timed out.
    if (breaker.state !== 'closed' && !probe) {
      gate.leave()
      throw new ShortCircuit('the circuit breaker is open')
    }
  }
  let left = false
  const leave = () => {
    if (left) return
    left = true
    gate.leave()
  }
  const sentAt = performance.now()
  try {
    const result = await sendWithin(call, timeoutMs, connection, sentAt, report, leave)
    guard.answeredAt = performance.now()
    breaker.success()
    return result
  } catch (error) {
    if (replyCode(error) !== undefined) guard.answeredAt = performance.now()
    // A late call while the server answers others: the server is up and busy (or this process was).
    const stalled = error instanceof DeadlineExceeded ? guard.answeredAt < sentAt : isServerFailure(error)
    if (stalled) breaker.failure()
    else breaker.success()
    throw error
  } finally {
    leave()
  }
}

/**
 * Sends the call and rejects with DeadlineExceeded when it has not settled `ms` after it was sent. The time is
 * the server's to answer in, so time it could not is not counted, once: a call sent while the connection was
 * being made gets `ms` from when it was ready; when the timer runs late (a blocked event loop), the server gets
 * a fresh `ms` from then; and a reply that arrived in time is read before giving up. `onDeadline` runs when the
 * call is given up (its slot is freed then, not when a stalled server finally answers).
 */
function sendWithin<T>(
  call: (deadline: Deadline) => Promise<T>,
  ms: number,
  connection: Connection,
  sentAt: number,
  report: ((outcome: CallOutcome, durationMs: number) => void) | undefined,
  onDeadline?: () => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const pending = new PendingCall<T>(sentAt, ms, connection, report, onDeadline, resolve, reject)
    let sent: Promise<T>
    try {
      sent = call(pending.deadline)
    } catch (error) {
      sent = Promise.reject(error)
    }
    sent.then(pending.settle, pending.fail)
  })
}

/** One call in flight: its deadline, its timer, and how it ends (one object per call, few closures). */
class PendingCall<T> {
  readonly deadline: { at: number }
  private settled = false
  private extended = false
  private timer: ReturnType<typeof setTimeout>

  constructor(
    private readonly sentAt: number,
    private readonly ms: number,
    private readonly connection: Connection,
    private readonly report: ((outcome: CallOutcome, durationMs: number) => void) | undefined,
    private readonly onDeadline: (() => void) | undefined,
    private readonly resolve: (value: T) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    this.deadline = { at: this.sentAt + ms }
    this.timer = setTimeout(this.expire, ms)
  }

  readonly settle = (value: T): void => {
    if (this.end('ok')) this.resolve(value)
  }

  readonly fail = (error: unknown): void => {
    if (this.end(error instanceof DeadlineExceeded ? 'timeout' : 'error')) this.reject(error)
  }

  private readonly expire = (): void => {
    const now = performance.now()
    const readySince = this.connection.readySince() ?? Number.NEGATIVE_INFINITY
    let later = 0
    if (readySince > this.sentAt) later = Math.min(readySince, now) + this.ms
    else if (now - this.deadline.at > LATE_TIMER_MS) later = now + this.ms
    if (!this.extended && later > now) {
      this.extended = true
      this.deadline.at = later
      this.timer = setTimeout(this.expire, later - now)
      return
    }
    // Timers run before the poll phase reads the sockets: a reply that arrived while the event loop was
    // busy is read only after this callback. Look again once the poll phase has run (setImmediate).
    setImmediate(this.giveUp)
  }

  private readonly giveUp = (): void => {
    if (!this.end('timeout')) return
    this.onDeadline?.()
    this.reject(new DeadlineExceeded(`no answer within timeoutMs (${this.ms} ms)`))
  }

  /** Ends the call once: false when it had ended already. */
  private end(outcome: CallOutcome): boolean {
    if (this.settled) return false
    this.settled = true
    clearTimeout(this.timer)
    this.report?.(outcome, performance.now() - this.sentAt)
    return true
  }
}
