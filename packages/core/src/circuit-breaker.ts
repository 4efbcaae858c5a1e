import { checkInteger, checkOptionNames } from './options.js'

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
 * the cool-down has passed; then one probe does (half-open), and its outcome closes or reopens the breaker.
 */
export interface CircuitBreaker {
  readonly state: BreakerState
  /** Times the breaker went from closed to open. */
  readonly openings: number
  /** Whether a call may go to the store now (in half-open, true for the one probe only). */
  tryAcquire(): boolean
  /** The time until a probe may go through: 0 unless open. */
  msUntilProbe(): number
  success(): void
  failure(): void
  /** Subscribes to transitions; returns the unsubscribe function. */
  on(event: 'open' | 'close', listener: () => void): () => void
}

/** Validates breaker options once, with their defaults filled in. */
function resolveBreakerOptions(options: CircuitBreakerOptions): Required<CircuitBreakerOptions> {
  checkOptionNames(options, 'breaker', ['failureThreshold', 'cooldownMs'])
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
  const listeners = { open: new Set<() => void>(), close: new Set<() => void>() }
  const emit = (event: 'open' | 'close') => {
    for (const listener of listeners[event]) listener()
  }

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
    on(event, listener) {
      listeners[event].add(listener)
      return () => listeners[event].delete(listener)
    },
  }
}

/**
 * One breaker per server behind a store, made on first use: on a Redis Cluster, a dead master opens only the
 * breaker of the slots it served, and tenants on the other masters keep their store decisions.
 */
export interface BreakerSet {
  /** The breaker that guards a call on this key (the one of the server that holds it). */
  for(key: string): CircuitBreaker
  /** The worst state among the breakers guarding calls lately (an unused one, say of a failed-over master, is left out). */
  readonly state: BreakerState
  /** Openings of every breaker. */
  readonly openings: number
  /** Any breaker opened, or closed. */
  on(event: 'open' | 'close', listener: () => void): () => void
}

const STATE_ORDER: Record<BreakerState, number> = { closed: 0, 'half-open': 1, open: 2 }

export function createBreakerSet(
  options: CircuitBreakerOptions = {},
  serverOf: (key: string) => string = () => '',
  clock = () => performance.now(),
): BreakerSet {
  const resolved = resolveBreakerOptions(options)
  const breakers = new Map<string, { breaker: CircuitBreaker; usedAt: number }>()
  const listeners = { open: new Set<() => void>(), close: new Set<() => void>() }
  const recently = () => clock() - Math.max(10_000, 2 * resolved.cooldownMs)
  return {
    for(key) {
      const server = serverOf(key)
      let entry = breakers.get(server)
      if (!entry) {
        const breaker = createCircuitBreaker(resolved, clock)
        for (const event of ['open', 'close'] as const) {
          breaker.on(event, () => {
            for (const listener of listeners[event]) listener()
          })
        }
        entry = { breaker, usedAt: 0 }
        breakers.set(server, entry)
      }
      entry.usedAt = clock()
      return entry.breaker
    },
    get state() {
      let worst: BreakerState = 'closed'
      const since = recently()
      for (const { breaker, usedAt } of breakers.values()) {
        if (usedAt >= since && STATE_ORDER[breaker.state] > STATE_ORDER[worst]) worst = breaker.state
      }
      return worst
    },
    get openings() {
      let openings = 0
      for (const { breaker } of breakers.values()) openings += breaker.openings
      return openings
    },
    on(event, listener) {
      listeners[event].add(listener)
      return () => listeners[event].delete(listener)
    },
  }
}
