// Where a store call's deadline is decided, in one place: when the caller gives a call up (DeadlineQueue), what
// deadline the server is sent and when a refusal is retried (createRunBefore), and how a reply already in the socket
// is read before giving up (the queue gives up after the poll phase). The memory store, which cannot hang, gets none.
import { StoreError } from '../common/errors.js'
import { type Scheduled, scheduleTimeout } from '../common/timer.js'
import { createServerClock, type ServerClock } from './server-clock.js'
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
  /** When the call was sent (performance.now() time), where the guard knows it. */
  readonly sentAt?: number
  /**
   * When the store read the call's reply (performance.now() time), where it knows it: the guard takes it as the
   * server's answer time, with no second clock read in that tick.
   */
  receivedAt?: number | undefined
  /**
   * The server the guard sent the call to (the client's name of it), where a guard sent it: the store reads that
   * server's clock and routes its script by it, with no lookup of its own.
   */
  readonly server?: string | undefined
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
 * promise and one object per call (see PendingCall), and no timer: the caller's deadline queue has one.
 */
export function guardedCall<T, A = undefined>(
  guard: ServerGuard | undefined,
  deadlines: DeadlineQueue,
  call: (deadline: Deadline, arg: A) => Promise<T>,
  observer: CallObserver,
  report?: (outcome: CallOutcome, durationMs: number) => void,
  arg?: A,
): Promise<T> {
  if (!guard) return send(call, arg as A, deadlines, undefined, observer, report)
  const { breaker, gate } = guard
  if (!breaker.tryAcquire()) return Promise.reject(refused(guard, 'the circuit breaker is open'))
  const probe = breaker.state === 'half-open'
  if (!deadlines.connection.connected()) {
    breaker.failure()
    return Promise.reject(refused(guard, 'the store is not connected'))
  }
  const waiting = gate.enter()
  if (!waiting) return send(call, arg as A, deadlines, guard, observer, report)
  return waiting.then(() => {
    // The breaker may have opened while this call waited: the calls ahead of it timed out.
    if (breaker.state !== 'closed' && !probe) {
      gate.leave()
      throw refused(guard, 'the circuit breaker is open')
    }
    return send(call, arg as A, deadlines, guard, observer, report)
  })
}

/** A call the guard did not send: it still counts as a call to its server (see ServerGuard.calledAt). */
function refused(guard: ServerGuard, reason: string): ShortCircuit {
  guard.calledAt = performance.now()
  return new ShortCircuit(reason)
}

function send<T, A>(
  call: (deadline: Deadline, arg: A) => Promise<T>,
  arg: A,
  deadlines: DeadlineQueue,
  guard: ServerGuard | undefined,
  observer: CallObserver,
  report: ((outcome: CallOutcome, durationMs: number) => void) | undefined,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const pending = new PendingCall<T>(deadlines, guard, observer, report, resolve, reject)
    deadlines.add(pending)
    let sent: Promise<T>
    observer.sent()
    try {
      sent = call(pending.deadline, arg)
    } catch (error) {
      sent = Promise.reject(error)
    }
    sent.then(pending.settle, pending.fail)
  })
}

/** What the deadline queue needs of a call in flight. */
interface Expiring {
  readonly deadline: Deadline
  readonly settled: boolean
  /** Its deadline passed at `now`: true when it moved it (once), false when the call is to be given up. */
  moveDeadline(now: number): boolean
  giveUp(): void
}

/**
 * When the calls of one caller (one timeoutMs) are given up: one timer for all of them, armed for the earliest
 * deadline, over a queue kept in deadline order (calls are sent in order with one timeoutMs, so a new call goes
 * at the tail; a moved deadline is put back in its place). A call that settles stays queued until its deadline,
 * and is skipped then. The timer is left to run out when no call is in flight (it keeps no process alive), so calls
 * one after another arm one timer per timeoutMs, not one each; it is armed again when a call finds it stale (see
 * Scheduled): one armed under fake timers since restored would never give a call up.
 */
export class DeadlineQueue {
  private calls: Expiring[] = []
  private head = 0
  private timer: Scheduled | undefined

  constructor(
    /** How long the server has to answer a call, from when it is sent. */
    readonly ms: number,
    readonly connection: Connection,
  ) {}

  add(call: Expiring): void {
    this.insert(call)
    if (this.timer === undefined) this.arm(call.deadline.at)
    else if (this.timer.stale) {
      this.timer.cancel()
      this.arm((this.calls[this.head] as Expiring).deadline.at)
    }
  }

  private insert(call: Expiring): void {
    const { calls } = this
    let at = calls.length
    while (at > this.head && (calls[at - 1] as Expiring).deadline.at > call.deadline.at) at--
    if (at === calls.length) calls.push(call)
    else calls.splice(at, 0, call)
  }

  /**
   * A call settled: the queue drops the settled calls at its head now (calls mostly settle in the order sent), so
   * it holds about the calls in flight; one settled behind a slow call is skipped when its deadline comes.
   */
  settled(): void {
    const { calls } = this
    while (this.head < calls.length && (calls[this.head] as Expiring).settled) this.head++
    this.compact()
  }

  private compact(): void {
    const { calls } = this
    if (this.head === calls.length) {
      calls.length = 0
      this.head = 0
    } else if (this.head > 1024 && this.head * 2 > calls.length) {
      this.calls = calls.slice(this.head)
      this.head = 0
    }
  }

  private arm(at: number): void {
    this.timer = scheduleTimeout(runQueue, Math.max(0, Math.ceil(at - performance.now())), this)
  }

  /** The timer ran: every call past its deadline moves it once or is given up. */
  run(): void {
    this.timer = undefined
    const now = performance.now()
    const { calls } = this
    const moved: Expiring[] = []
    const expired: Expiring[] = []
    while (this.head < calls.length) {
      const call = calls[this.head] as Expiring
      if (!call.settled && call.deadline.at > now) break
      this.head++
      if (call.settled) continue
      if (call.moveDeadline(now)) moved.push(call)
      else expired.push(call)
    }
    this.compact()
    // Back in deadline order: they are still in flight.
    for (const call of moved) this.insert(call)
    // Timers run before the poll phase reads the sockets: a reply that arrived while the event loop was busy is
    // read only after this callback. Look again once the poll phase has run (setImmediate).
    if (expired.length > 0) setImmediate(giveUpAll, expired)
    const next = this.calls[this.head]
    if (next !== undefined) this.arm(next.deadline.at)
  }
}

/**
 * One call in flight: its deadline and how it ends, once. It rejects with DeadlineExceeded when it has not settled
 * `ms` after it was sent. The time is the server's to answer in, so time it could not is not counted, once: a call
 * sent while the connection was being made gets `ms` from when it was ready; when the timer runs late (a blocked
 * event loop), the server gets a fresh `ms` from then; and a reply that arrived in time is read before giving up.
 * A call given up frees its slot then, not when a stalled server finally answers.
 */
class PendingCall<T> implements Expiring {
  readonly deadline: {
    at: number
    readonly sentAt: number
    receivedAt: number | undefined
    readonly server: string | undefined
  }
  private readonly sentAt = performance.now()
  settled = false
  private extended = false

  constructor(
    private readonly queue: DeadlineQueue,
    private readonly guard: ServerGuard | undefined,
    private readonly observer: CallObserver,
    private readonly report: ((outcome: CallOutcome, durationMs: number) => void) | undefined,
    private readonly resolve: (value: T) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    const { sentAt } = this
    this.deadline = { at: sentAt + queue.ms, sentAt, receivedAt: undefined, server: guard?.server }
    if (guard) guard.calledAt = sentAt
  }

  /** When the server answered: the store's reading of the reply, else now. */
  private answeredAt(): number {
    return this.deadline.receivedAt ?? performance.now()
  }

  readonly settle = (value: T): void => {
    const { guard } = this
    if (!this.end('ok')) {
      this.answeredLate()
      return
    }
    if (guard) {
      guard.answeredAt = this.answeredAt()
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
      if (replyCode(error) !== undefined) guard.answeredAt = this.answeredAt()
      this.judge(guard, error)
      guard.gate.leave()
    }
    this.reject(error)
  }

  moveDeadline(now: number): boolean {
    if (this.extended) return false
    const { ms, connection } = this.queue
    const readySince = connection.readySince() ?? Number.NEGATIVE_INFINITY
    let later = 0
    if (readySince > this.sentAt) later = Math.min(readySince, now) + ms
    else if (now - this.deadline.at > LATE_TIMER_MS) later = now + ms
    if (later <= now) return false
    this.extended = true
    this.deadline.at = later
    return true
  }

  giveUp(): void {
    if (!this.end('timeout')) return
    const { guard } = this
    const error = new DeadlineExceeded(`no answer within timeoutMs (${this.queue.ms} ms)`)
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
    this.queue.settled()
    this.report?.(outcome, performance.now() - this.sentAt)
    return true
  }
}

// Timer and immediate callbacks with their object as argument: no closure per run.
const runQueue = (queue: DeadlineQueue) => queue.run()
const giveUpAll = (calls: readonly Expiring[]) => {
  for (const call of calls) call.giveUp()
}

/** What a recording script's reply says for runBefore: -1 when it arrived after its deadline and recorded nothing. */
export interface TimedReply {
  readonly status: number
  /** The server's time of the reply, in µs. */
  readonly nowUs: number
}

/**
 * The store's side of the deadline: runs a recording script with the caller's deadline turned into the server's
 * clock (one ServerClock per server, see server-clock.ts), so that a call that runs after its caller gave up records
 * nothing. A refusal while the caller still waits means the clock estimate was off (the server's clock stepped
 * forward) or the deadline moved: it is tried once more, with both known. `call` sends the script with the deadline
 * given (server µs, 0 for none) and parses its reply.
 *
 * With `heldWrites` (node-redis writes a turn's commands at its end), a write held up by a busy event loop went out
 * after the call was given: readySince says so, and the queue counts the call's time from then, once, if it has not
 * moved the deadline already. A refusal then is retried with that deadline, erring early (the budget is measured
 * from when the call was given here, at or after it was sent). A guarded call's deadline names its server, which
 * `call` gets to route by; a call with none (a store used on its own) reads the clock of `key`'s server.
 */
export function createRunBefore(
  serverOf: (key: string) => string,
  connection: Pick<Connection, 'readySince'>,
  heldWrites: boolean,
) {
  const clocks = new Map<string, ServerClock>()
  const clockOf = (server: string) => {
    let clock = clocks.get(server)
    if (!clock) {
      clock = createServerClock()
      clocks.set(server, clock)
    }
    return clock
  }
  function deadlineOf(deadline: Deadline, given: { readonly at: number; readonly deadline: number } | undefined) {
    if (given === undefined || deadline.at !== given.deadline) return deadline.at
    const ready = connection.readySince()
    if (ready === undefined || ready <= given.at || !Number.isFinite(ready)) return deadline.at
    return Math.max(deadline.at, ready + given.deadline - given.at)
  }
  return async function runBefore<R extends TimedReply>(
    call: (deadlineUs: number, server: string | undefined) => Promise<R>,
    key: string,
    deadline: Deadline | undefined,
  ): Promise<R> {
    const server = deadline?.server
    const clock = clockOf(server ?? serverOf(key))
    const given = deadline && heldWrites ? { at: performance.now(), deadline: deadline.at } : undefined
    for (let attempt = 0; ; attempt++) {
      const until = deadline === undefined ? undefined : deadlineOf(deadline, given)
      const serverDeadline = until === undefined ? undefined : clock.serverTimeAt(until)
      // The guard read the clock as it sent the call, in this same tick: the first attempt's time is that.
      const sentAt = (attempt === 0 && given === undefined ? deadline?.sentAt : undefined) ?? performance.now()
      const reply = await call(serverDeadline === undefined ? 0 : Math.floor(serverDeadline * 1000), server)
      const receivedAt = performance.now()
      if (deadline !== undefined) deadline.receivedAt = receivedAt
      clock.observe(reply.nowUs / 1000, sentAt, receivedAt)
      if (reply.status !== -1) return reply
      if (attempt > 0 || deadline === undefined || receivedAt >= deadlineOf(deadline, given)) {
        throw new DeadlineExceeded('the call reached Redis after its deadline: nothing was recorded')
      }
    }
  }
}
