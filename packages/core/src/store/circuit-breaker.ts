import { createEmitter } from '../common/emitter.js'
import { checkInteger, checkOptionNames, optionNames } from '../common/validate.js'

export interface CircuitBreakerOptions {
  /** Consecutive failed store calls that open the breaker. Default 5. */
  failureThreshold?: number
  /** How long the breaker stays open before one probe may go through, in ms. Default 1000. */
  cooldownMs?: number
}

export type BreakerState = 'closed' | 'open' | 'half-open'

/**
 * Stops calls to a store that keeps failing, so a dead Redis costs microseconds per decision instead of a
 * timeout each. Closed: calls go through, consecutive failures are counted. Open: no call goes through until
 * the cool-down has passed, or until the server shows signs of life (probeNow); then one probe does
 * (half-open), and its outcome closes or reopens the breaker.
 */
export interface CircuitBreaker {
  readonly state: BreakerState
  /** Times the breaker went from closed to open. */
  readonly openings: number
  /** Whether a call may go to the store now (in half-open, true for the one probe only). */
  tryAcquire(): boolean
  /** The time until a probe may go through: 0 unless open. */
  msUntilProbe(): number
  /**
   * The server showed signs of life (its client is ready again, or it answered a call given up on): an open
   * breaker lets its probe go now instead of at the end of the cool-down.
   */
  probeNow(): void
  success(): void
  failure(): void
  /** Subscribes to transitions; returns the unsubscribe function. */
  on(event: 'open' | 'close', listener: () => void): () => void
}

/** A breaker's transitions. */
export type BreakerEvents = { open: []; close: [] }

/** Validates breaker options once, with their defaults filled in. */
export function resolveBreakerOptions(options: CircuitBreakerOptions): Required<CircuitBreakerOptions> {
  checkOptionNames(options, 'breaker', optionNames<CircuitBreakerOptions>({ failureThreshold: true, cooldownMs: true }))
  return {
    failureThreshold: checkInteger(options.failureThreshold ?? 5, 'breaker.failureThreshold', 1, 1_000),
    cooldownMs: checkInteger(options.cooldownMs ?? 1_000, 'breaker.cooldownMs', 1, 600_000),
  }
}

export function createCircuitBreaker(
  options: CircuitBreakerOptions = {},
  clock = () => performance.now(),
): CircuitBreaker {
  const { failureThreshold, cooldownMs } = resolveBreakerOptions(options)

  let state: BreakerState = 'closed'
  let failures = 0
  let openedAt = 0
  let openings = 0
  const events = createEmitter<BreakerEvents>()
  const emit = (event: 'open' | 'close') => events.emit(event)

  return {
    get state() {
      return state
    },
    get openings() {
      return openings
    },
    tryAcquire() {
      if (state === 'closed') return true
      if (state === 'half-open' || clock() - openedAt < cooldownMs) return false
      state = 'half-open'
      return true
    },
    msUntilProbe() {
      return state === 'open' ? Math.max(0, Math.ceil(openedAt + cooldownMs - clock())) : 0
    },
    probeNow() {
      if (state === 'open') openedAt = Number.NEGATIVE_INFINITY
    },
    success() {
      failures = 0
      if (state === 'closed') return
      state = 'closed'
      emit('close')
    },
    failure() {
      failures++
      if (state === 'half-open' || (state === 'closed' && failures >= failureThreshold)) {
        const opening = state === 'closed'
        state = 'open'
        openedAt = clock()
        if (opening) {
          openings++
          emit('open')
        }
      }
    },
    on: events.on,
  }
}
