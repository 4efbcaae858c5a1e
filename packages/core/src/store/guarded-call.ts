import { StoreError } from '../common/errors.js'
import { isServerFailure, replyCode } from './server-failure.js'
import type { ServerGuard } from './server-set.js'

/** The store did not answer within timeoutMs of the call being sent. */
export class DeadlineExceeded extends StoreError {}
/** The call was not sent: the server's breaker is open, or the client is disconnected. */
export class ShortCircuit extends StoreError {}

export type CallOutcome = 'ok' | 'error' | 'timeout'

/** When a store call's caller gives up: performance.now() time, which may move later (see PendingCall). */
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

/** What a caller learns of its calls: one sent (counted), and one answered (a store that answers again). */
export interface CallObserver {
  sent(): void
  answered(): void
}

/**
 * Sends one store call under its server's guard. It is not sent while the breaker is open or the client is
 * disconnected; it waits for a free slot among the server's calls in flight; and its deadline runs from the
 * moment it is sent, so a burst queued in this process is never mistaken for a slow server. The breaker
 * counts only what says the server is unavailable (a lost connection, LOADING, …, or a missed deadline while
 * the server answered nothing else): an error reply about one key, or one slow call among answered ones, fails
 * that call alone.
 *
 * `call` receives the deadline so that the store can refuse to record after it. On the hot path this is one
 * promise and one object per call (see PendingCall): the guard's bookkeeping runs where the call ends.
 */
export function guardedCall<T>(
  guard: ServerGuard | undefined,
  connection: Connection,
  timeoutMs: number,
  call: (deadline: Deadline) => Promise<T>,
  observer: CallObserver,
  report?: (outcome: CallOutcome, durationMs: number) => void,
): Promise<T> {
  if (!guard) return send(call, timeoutMs, connection, undefined, observer, report)
  const { breaker, gate } = guard
  if (!breaker.tryAcquire()) return Promise.reject(new ShortCircuit('the circuit breaker is open'))
  const probe = breaker.state === 'half-open'
  if (!connection.connected()) {
    breaker.failure()
    return Promise.reject(new ShortCircuit('the store is not connected'))
  }
  const waiting = gate.enter()
  if (!waiting) return send(call, timeoutMs, connection, guard, observer, report)
  return waiting.then(() => {
    // The breaker may have opened while this call waited: the calls ahead of it timed out.
    if (breaker.state !== 'closed' && !probe) {
      gate.leave()
      throw new ShortCircuit('the circuit breaker is open')
    }
    return send(call, timeoutMs, connection, guard, observer, report)
  })
}

function send<T>(
  call: (deadline: Deadline) => Promise<T>,
  ms: number,
  connection: Connection,
  guard: ServerGuard | undefined,
  observer: CallObserver,
  report: ((outcome: CallOutcome, durationMs: number) => void) | undefined,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const pending = new PendingCall<T>(ms, connection, guard, observer, report, resolve, reject)
    let sent: Promise<T>
    observer.sent()
    try {
      sent = call(pending.deadline)
    } catch (error) {
      sent = Promise.reject(error)
    }
    sent.then(pending.settle, pending.fail)
  })
}

/**
 * One call in flight: its deadline, its timer, and how it ends, once. It rejects with DeadlineExceeded when it has
 * not settled `ms` after it was sent. The time is the server's to answer in, so time it could not is not counted,
 * once: a call sent while the connection was being made gets `ms` from when it was ready; when the timer runs late
 * (a blocked event loop), the server gets a fresh `ms` from then; and a reply that arrived in time is read before
 * giving up. A call given up frees its slot then, not when a stalled server finally answers.
 */
class PendingCall<T> {
  readonly deadline: { at: number }
  private readonly sentAt = performance.now()
  private settled = false
  private extended = false
  private timer: ReturnType<typeof setTimeout>

  constructor(
    private readonly ms: number,
    private readonly connection: Connection,
    private readonly guard: ServerGuard | undefined,
    private readonly observer: CallObserver,
    private readonly report: ((outcome: CallOutcome, durationMs: number) => void) | undefined,
    private readonly resolve: (value: T) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    this.deadline = { at: this.sentAt + ms }
    this.timer = setTimeout(expire, ms, this)
  }

  readonly settle = (value: T): void => {
    const { guard } = this
    if (!this.end('ok')) {
      this.answeredLate()
      return
    }
    if (guard) {
      guard.answeredAt = performance.now()
      guard.breaker.success()
      guard.gate.leave()
    }
    this.observer.answered()
    this.resolve(value)
  }

  readonly fail = (error: unknown): void => {
    if (!this.end(error instanceof DeadlineExceeded ? 'timeout' : 'error')) {
      // The store's refusal of a late call (DeadlineExceeded) and an error reply are answers too.
      if (error instanceof DeadlineExceeded || replyCode(error) !== undefined) this.answeredLate()
      return
    }
    const { guard } = this
    if (guard) {
      if (replyCode(error) !== undefined) guard.answeredAt = performance.now()
      this.judge(guard, error)
      guard.gate.leave()
    }
    this.reject(error)
  }

  /** The timer ran: the deadline moves once for time the server could not answer in, or the call is given up. */
  expire(): void {
    const now = performance.now()
    const readySince = this.connection.readySince() ?? Number.NEGATIVE_INFINITY
    let later = 0
    if (readySince > this.sentAt) later = Math.min(readySince, now) + this.ms
    else if (now - this.deadline.at > LATE_TIMER_MS) later = now + this.ms
    if (!this.extended && later > now) {
      this.extended = true
      this.deadline.at = later
      this.timer = setTimeout(expire, later - now, this)
      return
    }
    // Timers run before the poll phase reads the sockets: a reply that arrived while the event loop was
    // busy is read only after this callback. Look again once the poll phase has run (setImmediate).
    setImmediate(giveUp, this)
  }

  giveUp(): void {
    if (!this.end('timeout')) return
    const { guard } = this
    const error = new DeadlineExceeded(`no answer within timeoutMs (${this.ms} ms)`)
    if (guard) {
      guard.gate.leave()
      this.judge(guard, error)
    }
    this.reject(error)
  }

  /** The server answered a call given up on: it answers again (a frozen one resumed), so an open breaker probes now. */
  private answeredLate(): void {
    this.guard?.breaker.probeNow()
  }

  /** What a failed call tells the breaker: a late call while the server answers others says it is up and busy. */
  private judge(guard: ServerGuard, error: unknown): void {
    const stalled = error instanceof DeadlineExceeded ? guard.answeredAt < this.sentAt : isServerFailure(error)
    if (stalled) guard.breaker.failure()
    else guard.breaker.success()
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

// Timer and immediate callbacks with the call as their argument: no closure per call.
const expire = (pending: { expire(): void }) => pending.expire()
const giveUp = (pending: { giveUp(): void }) => pending.giveUp()
