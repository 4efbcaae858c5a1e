import type { Emitter } from '../common/emitter.js'
import { StoreError } from '../common/errors.js'
import type { Logger } from '../common/logger.js'
import { type Deadline, DeadlineExceeded, DeadlineQueue, guardedCall, ShortCircuit } from '../store/guarded-call.js'
import { replyCode } from '../store/server-failure.js'
import { serversOf } from '../store/server-set.js'
import type { Store } from '../store/store.js'
import type { LimiterEvents } from './limiter-types.js'

/** What the store calls of one limiter counted: part of its stats(). */
export interface StoreCallCounters {
  storeCalls: number
  storeErrors: number
  timeouts: number
  shortCircuits: number
}

export interface StoreCaller {
  /**
   * Asks the store under the guard of the key's server (breaker, calls in flight, deadline); `call` gets `arg`
   * too, so that a hot caller passes a function made once and its argument rather than a closure per call.
   */
  ask<T, A = undefined>(key: string, call: (deadline: Deadline, arg: A) => Promise<T>, arg?: A): Promise<T>
  /** Calls an in-process store's method that answers at once (no guard to pass: it cannot hang), counted alike. */
  askNow<A, B, T>(call: (a: A, b: B) => T, a: A, b: B): T
  /**
   * Counts a failed call, tells the listeners and, once an outage, the logger; returns the error to throw. For a
   * refund, the error and the log say whether its units stayed: a refund not sent, or refused, did not apply; one
   * that got no answer may have.
   */
  failure(error: unknown, key: string, refund?: { readonly refundUnits: number }): StoreError
  stats(): Readonly<StoreCallCounters>
}

/** The deadline of a call that cannot hang. */
const NO_DEADLINE: Deadline = Object.freeze({ at: Number.POSITIVE_INFINITY })

/**
 * One limiter's calls to its store: guarded (see guardedCall), counted, reported as events, and logged once per
 * outage (with a note when the store answers again). `mode` says what the policy does meanwhile, for the log.
 */
export function createStoreCaller(
  store: Store,
  options: {
    readonly policyName: string
    readonly mode: string
    readonly timeoutMs: number
    readonly logger: Logger
    readonly events: Emitter<LimiterEvents>
  },
): StoreCaller {
  const { policyName, mode, timeoutMs, logger, events } = options
  const counters: StoreCallCounters = { storeCalls: 0, storeErrors: 0, timeouts: 0, shortCircuits: 0 }
  const servers = serversOf(store)
  // A store in this process (it answers decisions at once: Store.decideNow) cannot hang: no deadline, no guard.
  const inProcess = typeof store.decideNow === 'function'
  const connected = () => store.isConnected?.() !== false
  const connection = { connected, readySince: () => (store.readySince ? store.readySince() : 0) }
  const deadlines = new DeadlineQueue(timeoutMs, connection)
  const report = (outcome: 'ok' | 'error' | 'timeout', durationMs: number) => {
    events.emit('storeCall', { durationMs, outcome })
  }
  let failuresThisOutage = 0
  let refundFailuresThisOutage = 0

  const observer = {
    sent: () => {
      counters.storeCalls++
    },
    answered: () => {
      refundFailuresThisOutage = 0
      if (failuresThisOutage === 0) return
      logger.info?.(
        `fleetlimit: the store answers again for policy "${policyName}" (${failuresThisOutage} decisions without it).`,
      )
      failuresThisOutage = 0
    },
  }

  /**
   * An in-process store cannot hang and has no server to guard: its call is made as it is, with no timer. The
   * promise is chained only when something waits for the answer (a listener, or an outage to close).
   */
  function askInProcess<T, A>(call: (deadline: Deadline, arg: A) => Promise<T>, arg: A): Promise<T> {
    observer.sent()
    const reporting = events.has('storeCall')
    const sentAt = reporting ? performance.now() : 0
    let sent: Promise<T>
    try {
      sent = call(NO_DEADLINE, arg)
    } catch (error) {
      sent = Promise.reject(error)
    }
    if (!reporting && failuresThisOutage === 0 && refundFailuresThisOutage === 0) return sent
    return sent.then(
      (value) => {
        if (reporting) report('ok', performance.now() - sentAt)
        observer.answered()
        return value
      },
      (error: unknown) => {
        if (reporting) report('error', performance.now() - sentAt)
        throw error
      },
    )
  }

  function askNow<A, B, T>(call: (a: A, b: B) => T, a: A, b: B): T {
    observer.sent()
    const reporting = events.has('storeCall')
    const sentAt = reporting ? performance.now() : 0
    let value: T
    try {
      value = call(a, b)
    } catch (error) {
      if (reporting) report('error', performance.now() - sentAt)
      throw error
    }
    if (reporting) report('ok', performance.now() - sentAt)
    if (failuresThisOutage !== 0 || refundFailuresThisOutage !== 0) observer.answered()
    return value
  }

  return {
    askNow,
    ask: <T, A>(key: string, call: (deadline: Deadline, arg: A) => Promise<T>, arg?: A) =>
      inProcess
        ? askInProcess(call, arg as A)
        : guardedCall(
            servers?.for(key),
            deadlines,
            call,
            observer,
            events.has('storeCall') ? report : undefined,
            arg as A,
          ),
    failure(error, key, refund) {
      const kind =
        error instanceof ShortCircuit ? 'short-circuit' : error instanceof DeadlineExceeded ? 'timeout' : 'error'
      if (kind === 'short-circuit') counters.shortCircuits++
      else counters.storeErrors++
      if (kind === 'timeout') counters.timeouts++
      // A short circuit for a lost connection says why the connection was lost: the client's last error.
      const clientError = kind === 'short-circuit' && !connected() ? store.lastError?.() : undefined
      let reason = messageOf(error)
      if (clientError !== undefined) reason += ` (the client's last error: ${messageOf(clientError)})`
      const retryAfterMs = servers?.for(key).breaker.msUntilProbe() || 1_000
      const options = { cause: clientError ?? error, retryAfterMs }
      let failure: StoreError
      if (refund) {
        const unanswered = kind === 'timeout' || (kind === 'error' && replyCode(error) === undefined)
        failure = new StoreError(refundFailure(policyName, reason, unanswered, refund.refundUnits), options)
        if (refundFailuresThisOutage++ === 0) logger.warn(failure.message)
      } else {
        failure = new StoreError(`the store failed a decision for policy "${policyName}": ${reason}`, options)
        if (failuresThisOutage++ === 0) {
          const until = refusedLogin(clientError ?? error)
            ? `: Redis refused the client's credentials, which does not pass by itself; fix the password or username in the client's options (its auth, or the URL)`
            : ' until it recovers'
          logger.warn(`fleetlimit: ${reason}; policy "${policyName}" is ${mode}${until}.`)
        }
      }
      events.emit('storeError', failure, kind)
      return failure
    },
    stats: () => ({ ...counters }),
  }
}

/**
 * What a failed refund left: a refund that got no answer (a missed deadline, a lost connection) may have been
 * applied, one not sent or refused by the server was not; either way a retry applies it at most once.
 */
function refundFailure(policyName: string, reason: string, unknown: boolean, units: number): string {
  const one = units === 1
  const them = one ? 'its unit' : `its ${units} units`
  const leave = one ? 'until it leaves the window' : 'until they leave the window'
  const left = unknown
    ? `it may or may not have been applied, so ${them} may still count ${leave}; refund(decision) again applies it at most once`
    : `it was not applied: ${them} still ${one ? 'counts' : 'count'} ${leave}, unless refund(decision) is tried again`
  return `the store did not confirm a refund for policy "${policyName}" (${reason}); ${left}.`
}

/** A refused login (WRONGPASS, NOAUTH, or an older server's "ERR invalid password"): no retry fixes it. */
function refusedLogin(error: unknown): boolean {
  const code = replyCode(error)
  return code === 'WRONGPASS' || code === 'NOAUTH' || (code === 'ERR' && /invalid password/i.test(messageOf(error)))
}

/** An error's message without our prefix or a closing full stop, to be quoted inside a sentence. */
function messageOf(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/^fleetlimit: /, '').replace(/\.+$/, '')
}
