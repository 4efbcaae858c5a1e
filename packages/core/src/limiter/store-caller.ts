import type { Emitter } from '../common/emitter.js'
import { StoreError } from '../common/errors.js'
import { replyCode } from '../store/server-failure.js'
import type { Store } from '../store/store.js'
import { type Deadline, DeadlineExceeded, guardedCall, ShortCircuit } from './guarded-call.js'
import type { LimiterEvents, Logger } from './limiter.js'

/** What the store calls of one limiter counted: part of its stats(). */
export interface StoreCallCounters {
  storeCalls: number
  storeErrors: number
  timeouts: number
  shortCircuits: number
}

export interface StoreCaller {
  /** Asks the store under the guard of the key's server (breaker, calls in flight, deadline). */
  ask<T>(key: string, call: (deadline: Deadline) => Promise<T>): Promise<T>
  /** Counts a failed call, tells the listeners and, once an outage, the logger; returns the error to throw. */
  failure(error: unknown, key: string): StoreError
  stats(): Readonly<StoreCallCounters>
}

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
  const { servers } = store
  const connected = () => store.isConnected?.() !== false
  const connection = { connected, readySince: () => (store.readySince ? store.readySince() : 0) }
  const report = (outcome: 'ok' | 'error' | 'timeout', durationMs: number) => {
    events.emit('storeCall', { durationMs, outcome })
  }
  let failuresThisOutage = 0

  const observer = {
    sent: () => {
      counters.storeCalls++
    },
    answered: () => {
      if (failuresThisOutage === 0) return
      logger.info?.(
        `fleetlimit: the store answers again for policy "${policyName}" (${failuresThisOutage} decisions without it).`,
      )
      failuresThisOutage = 0
    },
  }

  return {
    ask: (key, call) =>
      guardedCall(
        servers?.for(key),
        connection,
        timeoutMs,
        call,
        observer,
        events.has('storeCall') ? report : undefined,
      ),
    failure(error, key) {
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
      const failure = new StoreError(`the store failed a decision for policy "${policyName}": ${reason}`, {
        cause: clientError ?? error,
        retryAfterMs,
      })
      if (failuresThisOutage++ === 0) {
        const until = refusedLogin(clientError ?? error)
          ? `: Redis refused the client's credentials, which does not pass by itself; fix the password or username in the client's options (its auth, or the URL)`
          : ' until it recovers'
        logger.warn(`fleetlimit: ${reason}; policy "${policyName}" is ${mode}${until}.`)
      }
      events.emit('storeError', failure, kind)
      return failure
    },
    stats: () => ({ ...counters }),
  }
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
