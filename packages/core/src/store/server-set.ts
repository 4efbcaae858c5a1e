import { createEmitter } from '../common/emitter.js'
import { checkInteger } from '../common/validate.js'
import { type CallGate, createCallGate } from './call-gate.js'
import {
  type BreakerEvents,
  type BreakerState,
  type CircuitBreaker,
  type CircuitBreakerOptions,
  createCircuitBreaker,
  resolveBreakerOptions,
} from './circuit-breaker.js'

/** What guards the calls to one server: its circuit breaker and the bound on its calls in flight. */
export interface ServerGuard {
  /** The server's name (the client's, such as 'host:port' on a Cluster; '' for a single server). */
  readonly server: string
  readonly breaker: CircuitBreaker
  readonly gate: CallGate
  /** When the server last answered a call (performance.now() time): a late call says less when others are answered. */
  answeredAt: number
  /**
   * When a call was last sent to the server or refused by its guard (performance.now() time, set by the guarded
   * call): a server not called lately is left out of the set's state.
   */
  calledAt: number
}

export interface ServerSetOptions {
  breaker?: CircuitBreakerOptions
  /** The most calls in flight to one server from this store; more wait for a slot. Default 128. */
  maxInFlight?: number
}

/**
 * One guard per server behind a store, made on first use and shared by every limiter on the store: on a Redis
 * Cluster, a dead master opens only the breaker of the slots it served, and tenants on the other masters keep
 * their store decisions.
 */
export interface ServerSet {
  /** The guard of the server that holds this key. */
  for(key: string): ServerGuard
  /** The worst breaker state among the servers called lately (an unused one, say a failed-over master, is left out). */
  readonly state: BreakerState
  /** Openings of every breaker. */
  readonly openings: number
  /** Any breaker opened, or closed. */
  on(event: 'open' | 'close', listener: () => void): () => void
  /** The client is ready again: every open breaker probes at its next call (see CircuitBreaker.probeNow). */
  probeNow(): void
}

const STATE_ORDER: Record<BreakerState, number> = { closed: 0, 'half-open': 1, open: 2 }

export function createServerSet(
  options: ServerSetOptions = {},
  serverOf: (key: string) => string = () => '',
  clock = () => performance.now(),
): ServerSet {
  const breakerOptions = resolveBreakerOptions(options.breaker ?? {})
  const maxInFlight = checkInteger(options.maxInFlight ?? 128, 'redisStore.maxInFlight', 1, 100_000)
  const servers = new Map<string, ServerGuard>()
  const events = createEmitter<BreakerEvents>()
  const recently = () => clock() - Math.max(10_000, 2 * breakerOptions.cooldownMs)
  return {
    for(key) {
      const server = serverOf(key)
      let entry = servers.get(server)
      if (!entry) {
        const breaker = createCircuitBreaker(breakerOptions, clock)
        for (const event of ['open', 'close'] as const) {
          breaker.on(event, () => events.emit(event))
        }
        const gate = createCallGate(maxInFlight)
        entry = { server, breaker, gate, answeredAt: Number.NEGATIVE_INFINITY, calledAt: clock() }
        servers.set(server, entry)
      }
      return entry
    },
    get state() {
      let worst: BreakerState = 'closed'
      const since = recently()
      for (const { breaker, calledAt } of servers.values()) {
        if (calledAt >= since && STATE_ORDER[breaker.state] > STATE_ORDER[worst]) worst = breaker.state
      }
      return worst
    },
    get openings() {
      let openings = 0
      for (const { breaker } of servers.values()) openings += breaker.openings
      return openings
    },
    on: events.on,
    probeNow() {
      for (const { breaker } of servers.values()) breaker.probeNow()
    },
  }
}

// The guards of each remote store, kept beside it rather than on it, so that the Store contract names no guard.
const serverSets = new WeakMap<object, ServerSet>()

/** Gives a remote store its guards: every limiter on it then shares them. */
export function guardStore<S extends object>(store: S, servers: ServerSet): S {
  serverSets.set(store, servers)
  return store
}

/** The guards of a store made by redisStore(); undefined for any other (it is called unguarded, with a deadline). */
export function serversOf(store: object): ServerSet | undefined {
  return serverSets.get(store)
}
