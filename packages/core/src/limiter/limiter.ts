import { parseDuration } from '../common/duration.js'
import { createEmitter } from '../common/emitter.js'
import { OptionError, type StoreError } from '../common/errors.js'
import { checkOptionNames } from '../common/validate.js'
import type { BreakerState } from '../store/circuit-breaker.js'
import type { Store, WindowRequest } from '../store/store.js'
import { createAcquireQueue } from './acquire-queue.js'
import { combine, type Decision, toDecision } from './decision.js'
import { createDegradedMode, type Window } from './degraded.js'
import { buildKey, type KeyInput } from './keys.js'
import { resolveLimiterOptions } from './limiter-options.js'
import { createLocalTier, type LocalOptions, noLocalCounts } from './local-tier.js'
import { type Policy, type PolicyOptions, policyKeyName } from './policy.js'
import { createStoreCaller } from './store-caller.js'

export interface RateLimiterOptions extends Partial<PolicyOptions> {
  /** Where the windows live. Default: a new `memoryStore()` (this process only). */
  store?: Store
  /** Where the one warning per store outage (and the recovery note) go. Default: console. */
  logger?: Logger
  /** The local tier: a deny cache (on by default) and leases (off by default); false turns both off. */
  local?: LocalOptions | false
  /**
   * Several policies decided together (instead of the policy options): a call is admitted only if
   * every policy admits it, and only then counted in all of them, in one store call.
   */
  policies?: readonly (Policy | PolicyOptions)[]
  /** The most `acquire()` waiters queued per key in this process; a call beyond it rejects at once. Default 1000. */
  maxQueue?: number
}

export interface ConsumeOptions {
  /** Units this call consumes. Default: the policy's `cost` (1). */
  cost?: number
}

export interface AcquireOptions extends ConsumeOptions {
  /** The longest time to wait for admission, in ms or as a duration string. Default: no limit. */
  maxWaitMs?: number | string
  /** Stops waiting: the promise rejects with the signal's reason. */
  signal?: AbortSignal
}

export interface LimiterStats {
  /** Decisions made (a call that failed closed made none). */
  readonly decisions: number
  readonly allowed: number
  readonly denied: number
  /** Calls sent to the store for decisions. */
  readonly storeCalls: number
  /** Calls sent to the store to return a lease's unused units (off the request path). */
  readonly releaseCalls: number
  readonly localHits: number
  /** Decisions made without the store: by the fallback window, or open. */
  readonly degraded: number
  /** Calls sent to the store that failed: an error reply, a lost connection, or a missed deadline. */
  readonly storeErrors: number
  /** Of storeErrors, those that missed the deadline (timeoutMs). */
  readonly timeouts: number
  /** Calls not sent because the store's breaker was open or its client disconnected. */
  readonly shortCircuits: number
  /** Times the store's breaker opened since this limiter was created. */
  readonly breakerOpenings: number
  /** Units reserved by leases, admitted from them, dropped unused at expiry, and returned to the store. */
  readonly leasedUnits: number
  readonly leaseUsedUnits: number
  readonly expiredUnits: number
  readonly returnedUnits: number
}

/** The limiter's events; `on` returns the unsubscribe function. */
export type LimiterEvents = {
  /** Every decision counted in `stats().decisions`. */
  decision: [decision: Decision]
  /** A call sent to the store (a short-circuited one is not sent), once it settled or missed the deadline. */
  storeCall: [call: { readonly durationMs: number; readonly outcome: 'ok' | 'error' | 'timeout' }]
  /**
   * A decision could not use the store: the call was sent and failed ('error'), missed the deadline
   * ('timeout'), or was not sent because the breaker was open or the client disconnected ('short-circuit').
   */
  storeError: [error: StoreError, kind: 'error' | 'timeout' | 'short-circuit']
  /** A decision made without the store. */
  degraded: [decision: Decision]
  breakerOpen: []
  breakerClose: []
}

export interface Logger {
  warn(message: string): void
  info?(message: string): void
}

export interface RateLimiter {
  /** The policy (the first one, with `policies`). */
  readonly policy: Policy
  readonly policies: readonly Policy[]
  /** The state of the store's circuit breaker; undefined for a store without one (the memory store). */
  readonly breakerState: BreakerState | undefined
  /** Admits and counts `cost` units now, or denies with the exact wait. Never waits. */
  consume(key: KeyInput, options?: ConsumeOptions): Promise<Decision>
  /** Waits, first-in first-out with this process's other waiters on the key, until admitted. */
  acquire(key: KeyInput, options?: AcquireOptions): Promise<Decision>
  /** The decision one unit would get now, without consuming anything. */
  peek(key: KeyInput): Promise<Decision>
  /** Forgets every unit of the key. */
  reset(key: KeyInput): Promise<void>
  stats(): LimiterStats
  on<E extends keyof LimiterEvents>(event: E, listener: (...args: LimiterEvents[E]) => void): () => void
}

/**
 * Builds a limiter for one policy, or several decided together, on one store; every option is validated here,
 * once.
 *
 * @example
 * ```ts
 * const limiter = createRateLimiter({ store: redisStore(new Redis()), limit: 100, window: '1m', name: 'api' })
 * const decision = await limiter.consume({ tenant: 'acme', route: 'GET /search' })
 * if (!decision.allowed) console.log(`retry in ${decision.retryAfterMs} ms`)
 * ```
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const config = resolveLimiterOptions(options)
  const { policies, store, failClosed, defaultCost } = config
  const [first] = policies
  const { servers } = store
  const openingsAtStart = servers?.openings ?? 0
  const events = createEmitter<LimiterEvents>((event) => {
    // Breaker events are forwarded only once someone listens, so idle limiters hold no subscription.
    if (event === 'breakerOpen') servers?.on('open', () => events.emit('breakerOpen'))
    if (event === 'breakerClose') servers?.on('close', () => events.emit('breakerClose'))
  })
  const mode = failClosed
    ? 'failing closed'
    : policies.some((p) => p.fallback)
      ? 'failing open under its fallback limit'
      : 'failing open, unlimited'
  const caller = createStoreCaller(store, {
    policyName: first.name,
    mode,
    timeoutMs: config.timeoutMs,
    logger: config.logger,
    events,
  })
  const degraded = createDegradedMode(policies)
  const counters = { decisions: 0, allowed: 0, denied: 0, degraded: 0 }
  // Leases reserve units of one sliding log; other calls only use the deny cache.
  const leasable = policies.length === 1 && first.algorithm === 'sliding-log'
  const { local } = config
  const tier = local && createLocalTier(leasable ? local : { ...local, lease: false }, first, store)

  const keyNames = policies.map(policyKeyName)
  /** The windows a key input counts in: one per policy, with its store key. */
  const windowsOf = (input: KeyInput): Window[] =>
    policies.map((policy, i) => {
      const tenantOnly = policy.scope === 'tenant' && typeof input === 'object' && input !== null
      return { policy, key: buildKey(keyNames[i] as string, tenantOnly ? { tenant: input.tenant } : input) }
    })
  const idOf = (windows: readonly Window[]) =>
    windows.length === 1 ? (windows[0] as Window).key : windows.map((w) => w.key).join(' ')
  const keyOf = (windows: readonly Window[]) => (windows[0] as Window).key

  const requestsOf = (windows: readonly Window[], cost: number): WindowRequest[] =>
    windows.map(({ policy, key }) => ({
      key,
      limit: policy.limit,
      windowMs: policy.window,
      cost,
      ...(policy.buckets !== undefined && { buckets: policy.buckets }),
    }))

  function count(decision: Decision): Decision {
    counters.decisions++
    if (decision.allowed) counters.allowed++
    else counters.denied++
    events.emit('decision', decision)
    return decision
  }

  async function degrade(windows: readonly Window[], cost: number, error: unknown): Promise<Decision> {
    const failure = caller.failure(error, keyOf(windows))
    if (failClosed) throw failure
    counters.degraded++
    const decision = await degraded.decide(windows, cost)
    events.emit('degraded', decision)
    return count(decision)
  }

  // One lease call per key at a time: calls that arrive meanwhile wait for it and take its units.
  const leasing = new Map<string, Promise<unknown>>()

  async function decide(windows: readonly Window[], cost: number): Promise<Decision> {
    const id = idOf(windows)
    tier?.observe(id, cost)
    for (;;) {
      const hit = tier?.tryLocal(id, cost)
      if (hit) return count(hit)
      const pending = leasing.get(id)
      if (!pending) break
      await pending.catch(() => {})
    }
    const plan = store.lease ? tier?.leasePlan(id, cost) : undefined
    const sentAt = tier?.now() ?? 0
    let decision: Decision
    try {
      if (plan) {
        const call = leaseFor(id, keyOf(windows), cost, plan, sentAt)
        leasing.set(id, call)
        decision = await call.finally(() => leasing.delete(id))
      } else decision = await consume(windows, cost)
    } catch (error) {
      return degrade(windows, cost, error)
    }
    tier?.remember(id, cost, decision, sentAt)
    return count(decision)
  }

  async function consume(windows: readonly Window[], cost: number): Promise<Decision> {
    const results = await caller.ask(keyOf(windows), (deadline) => store.consume(requestsOf(windows, cost), deadline))
    return combine(results.map((result, i) => toDecision(result, 'store', (windows[i] as Window).policy)))
  }

  /** One store call reserves `size` units; this call takes `cost` of them, the local tier keeps the rest. */
  async function leaseFor(
    id: string,
    key: string,
    cost: number,
    { size, ttlMs }: { size: number; ttlMs: number },
    sentAt: number,
  ): Promise<Decision> {
    const { limit, window: windowMs } = first
    const request = { key, limit, windowMs, want: size, min: cost, waitFor: size, ttlMs }
    const lease = store.lease as NonNullable<Store['lease']>
    const result = await caller.ask(key, (deadline) => lease(request, deadline))
    const { granted } = result.lease
    if (granted === 0) return toDecision(result, 'store', first)
    tier?.addLease(id, key, result, ttlMs, sentAt, cost)
    return toDecision({ ...result, remaining: result.remaining + granted - cost }, 'store', first)
  }

  function resolveCost(options: ConsumeOptions | undefined, accepted: readonly string[]): number {
    if (options === undefined) return defaultCost
    checkOptionNames(options, 'options', accepted)
    return options.cost === undefined ? defaultCost : config.checkCost(options.cost)
  }

  const acquireInQueue = createAcquireQueue(decide, { maxQueue: config.maxQueue })

  return {
    policy: first,
    policies,
    get breakerState() {
      return servers?.state
    },
    async consume(key, options) {
      const cost = resolveCost(options, ['cost'])
      return decide(windowsOf(key), cost)
    },
    async acquire(key, options) {
      const cost = resolveCost(options, ['cost', 'maxWaitMs', 'signal'])
      const maxWait = options?.maxWaitMs
      const maxWaitMs =
        maxWait === undefined || maxWait === Number.POSITIVE_INFINITY
          ? Number.POSITIVE_INFINITY
          : parseDuration(maxWait, 'maxWaitMs', { min: 0, max: 2_147_483_647 })
      const signal = options?.signal
      if (signal !== undefined && !(signal instanceof AbortSignal)) {
        throw new OptionError('signal', signal, 'an AbortSignal')
      }
      const windows = windowsOf(key)
      return acquireInQueue(idOf(windows), windows, cost, maxWaitMs, signal)
    },
    async peek(key) {
      const windows = windowsOf(key)
      const results = await caller
        .ask(keyOf(windows), () => store.peek(requestsOf(windows, 1)))
        .catch((error: unknown) => {
          throw caller.failure(error, keyOf(windows))
        })
      return combine(results.map((result, i) => toDecision(result, 'store', (windows[i] as Window).policy)))
    },
    async reset(key) {
      const windows = windowsOf(key)
      tier?.forget(idOf(windows))
      await Promise.all(windows.flatMap(({ key }) => [store.reset(key), degraded.reset(key)]))
    },
    stats: () => ({
      ...counters,
      ...caller.stats(),
      ...(tier ? tier.stats() : noLocalCounts()),
      breakerOpenings: (servers?.openings ?? 0) - openingsAtStart,
    }),
    on: events.on,
  }
}
