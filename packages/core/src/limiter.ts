import { createAcquireQueue } from './acquire-queue.js'
import type { BreakerState } from './circuit-breaker.js'
import type { Decision, DecisionSource } from './decision.js'
import { parseDuration } from './duration.js'
import { createEmitter } from './emitter.js'
import { OptionError, StoreError } from './errors.js'
import { type Deadline, DeadlineExceeded, guardedCall, ShortCircuit } from './guarded-call.js'
import { buildKey, type KeyInput } from './keys.js'
import { createLocalTier, type LocalOptions, resolveLocal } from './local-tier.js'
import { memoryStore } from './memory-store.js'
import { checkInteger, checkOptionNames } from './options.js'
import {
  checkCost,
  definePolicy,
  POLICY_OPTION_NAMES,
  type Policy,
  type PolicyOptions,
  policyKeyName,
  resolvePolicy,
} from './policy.js'
import { isStore, type Store, type WindowRequest, type WindowResult } from './store.js'

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

const LIMITER_OPTION_NAMES = ['store', 'policies', 'logger', 'local', 'maxQueue', ...POLICY_OPTION_NAMES] as const

/** Builds a limiter for one policy, or several decided together, on one store; every option is validated here, once. */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  checkOptionNames(options, 'createRateLimiter', LIMITER_OPTION_NAMES)
  const policies = resolvePolicies(options)
  const store = resolveStore(options.store)
  const first = policies[0] as Policy
  const timeoutMs = Math.min(...policies.map((p) => p.timeoutMs))
  const failClosed = policies.some((p) => p.onStoreError === 'fail-closed')
  const fallback = policies.some((p) => p.fallback) ? memoryStore() : undefined
  const defaultCost = Math.max(...policies.map((p) => p.cost))
  const maxCost = Math.min(...policies.map((p) => p.limit))
  // The multi-window script is a sliding log's: bucketed policies are alone.
  const costAlgorithm = first.algorithm
  if (policies.length > 1) checkCost(defaultCost, 'cost', maxCost, costAlgorithm, policies.length)

  const logger = options.logger ?? console
  if (typeof logger?.warn !== 'function')
    throw new OptionError('logger', logger, 'an object with a warn(message) method')
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
  let failuresThisOutage = 0

  const counters = {
    decisions: 0,
    allowed: 0,
    denied: 0,
    storeCalls: 0,
    localHits: 0,
    degraded: 0,
    storeErrors: 0,
    timeouts: 0,
    shortCircuits: 0,
    releaseCalls: 0,
    leasedUnits: 0,
    leaseUsedUnits: 0,
    expiredUnits: 0,
    returnedUnits: 0,
  }
  const local = resolveLocal(options.local, first.limit, first.window)
  // Leases reserve units of one sliding log; other calls only use the deny cache.
  const leasable = policies.length === 1 && first.algorithm === 'sliding-log'
  const tier = local && createLocalTier(leasable ? local : { ...local, lease: false }, first, store, counters)

  const keyNames = policies.map(policyKeyName)
  const keysOf = (input: KeyInput): string[] =>
    policies.map((p, i) => {
      const tenantOnly = p.scope === 'tenant' && typeof input === 'object' && input !== null
      return buildKey(keyNames[i] as string, tenantOnly ? { tenant: input.tenant } : input)
    })

  const requestsOf = (keys: readonly string[], cost: number): WindowRequest[] =>
    policies.map((p, i) => ({
      key: keys[i] as string,
      limit: p.limit,
      windowMs: p.window,
      cost,
      ...(p.buckets !== undefined && { buckets: p.buckets }),
    }))

  function count(decision: Decision): Decision {
    counters.decisions++
    if (decision.allowed) counters.allowed++
    else counters.denied++
    events.emit('decision', decision)
    return decision
  }

  const connected = () => store.isConnected?.() !== false
  const connection = { connected, readySince: () => (store.readySince ? store.readySince() : 0) }
  const report = (outcome: 'ok' | 'error' | 'timeout', durationMs: number) => {
    events.emit('storeCall', { durationMs, outcome })
  }

  /** Asks the store under the guard of the key's server (breaker, calls in flight, deadline). */
  async function ask<T>(key: string, call: (deadline: Deadline) => Promise<T>): Promise<T> {
    const counting = (deadline: Deadline) => {
      counters.storeCalls++
      return call(deadline)
    }
    const reporting = events.has('storeCall') ? report : undefined
    const result = await guardedCall(servers?.for(key), connection, timeoutMs, counting, reporting)
    if (failuresThisOutage > 0) {
      logger.info?.(
        `fleetlimit: the store answers again for policy "${first.name}" (${failuresThisOutage} decisions without it).`,
      )
      failuresThisOutage = 0
    }
    return result
  }

  /** Counts a failed store call, tells the listeners and, once an outage, the logger; returns the error to throw. */
  function storeFailure(error: unknown, key: string): StoreError {
    const kind =
      error instanceof ShortCircuit ? 'short-circuit' : error instanceof DeadlineExceeded ? 'timeout' : 'error'
    if (kind === 'short-circuit') counters.shortCircuits++
    else counters.storeErrors++
    if (kind === 'timeout') counters.timeouts++
    // A short circuit for a lost connection says why the connection was lost: the client's last error.
    const clientError = kind === 'short-circuit' && !connected() ? store.lastError?.() : undefined
    const cause = clientError ?? error
    let reason = messageOf(error)
    if (clientError !== undefined) reason += ` (the client's last error: ${messageOf(clientError)})`
    const retryAfterMs = servers?.for(key).breaker.msUntilProbe() || 1_000
    const failure = new StoreError(`the store failed a decision for policy "${first.name}": ${reason}`, {
      cause,
      retryAfterMs,
    })
    if (failuresThisOutage++ === 0)
      logger.warn(`fleetlimit: ${reason}; policy "${first.name}" is ${mode} until it recovers.`)
    events.emit('storeError', failure, kind)
    return failure
  }

  async function degrade(keys: readonly string[], cost: number, error: unknown): Promise<Decision> {
    const failure = storeFailure(error, keys[0] as string)
    if (failClosed) throw failure
    counters.degraded++
    const withFallback = policies.flatMap((p, i) => (p.fallback ? [{ policy: p, key: keys[i] as string }] : []))
    let decision: Decision
    if (fallback && withFallback.length > 0) {
      // A cost above a fallback limit counts as that whole limit, so it can still be admitted alone.
      const requests = withFallback.map(({ policy, key }) => {
        const limit = (policy.fallback as { limit: number }).limit
        return { key, limit, windowMs: policy.window, cost: Math.min(cost, limit) }
      })
      const results = await fallback.consume(requests)
      decision = combine(
        results.map((result, i) =>
          toDecision(result, 'fallback', (withFallback[i] as { policy: Policy }).policy, true),
        ),
      )
    } else {
      // Unknown numbers are not invented: the decision says only that it was admitted unlimited.
      const { limit, name } = first
      decision = { allowed: true, limit, remaining: limit, retryAfterMs: 0, resetMs: 0, source: 'open', policy: name }
    }
    events.emit('degraded', decision)
    return count(decision)
  }

  // One lease call per key at a time: calls that arrive meanwhile wait for it and take its units.
  const leasing = new Map<string, Promise<unknown>>()

  async function decide(keys: readonly string[], cost: number): Promise<Decision> {
    const id = keys.join(' ')
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
        const call = leaseFor(id, keys[0] as string, cost, plan, sentAt)
        leasing.set(id, call)
        decision = await call.finally(() => leasing.delete(id))
      } else decision = await consume(keys, cost)
    } catch (error) {
      return degrade(keys, cost, error)
    }
    tier?.remember(id, cost, decision, sentAt)
    return count(decision)
  }

  async function consume(keys: readonly string[], cost: number): Promise<Decision> {
    const results = await ask(keys[0] as string, (deadline) => store.consume(requestsOf(keys, cost), deadline))
    return combine(results.map((result, i) => toDecision(result, 'store', policies[i] as Policy)))
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
    const result = await ask(key, (deadline) => (store.lease as NonNullable<Store['lease']>)(request, deadline))
    const { granted } = result.lease
    if (granted === 0) return toDecision(result, 'store', first)
    tier?.addLease(id, key, result, ttlMs, sentAt, cost)
    return toDecision({ ...result, remaining: result.remaining + granted - cost }, 'store', first)
  }

  function resolveCost(options: ConsumeOptions | undefined, accepted: readonly string[]): number {
    if (options === undefined) return defaultCost
    checkOptionNames(options, 'options', accepted)
    return options.cost === undefined
      ? defaultCost
      : checkCost(options.cost, 'cost', maxCost, costAlgorithm, policies.length)
  }

  const acquireInQueue = createAcquireQueue(decide, {
    maxQueue: checkInteger(options.maxQueue ?? 1_000, 'maxQueue', 1, 10_000_000),
  })

  return {
    policy: first,
    policies,
    get breakerState() {
      return servers?.state
    },
    async consume(key, options) {
      const cost = resolveCost(options, ['cost'])
      return decide(keysOf(key), cost)
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
      const keys = keysOf(key)
      return acquireInQueue(keys.join(' '), keys, cost, maxWaitMs, signal)
    },
    async peek(key) {
      const keys = keysOf(key)
      const results = await ask(keys[0] as string, () => store.peek(requestsOf(keys, 1))).catch((error: unknown) => {
        throw storeFailure(error, keys[0] as string)
      })
      return combine(results.map((result, i) => toDecision(result, 'store', policies[i] as Policy)))
    },
    async reset(key) {
      const keys = keysOf(key)
      tier?.forget(keys.join(' '))
      await Promise.all(keys.flatMap((storeKey) => [store.reset(storeKey), fallback?.reset(storeKey)]))
    },
    stats: () => ({ ...counters, breakerOpenings: (servers?.openings ?? 0) - openingsAtStart }),
    on: events.on,
  }
}

function toDecision(result: WindowResult, source: DecisionSource, policy: Policy, isFallback = false): Decision {
  return {
    allowed: result.allowed,
    limit: isFallback ? (policy.fallback?.limit ?? policy.limit) : policy.limit,
    remaining: result.remaining,
    retryAfterMs: result.retryAfterMs,
    resetMs: result.resetMs,
    source,
    policy: policy.name,
  }
}

/**
 * One decision from one per policy: admitted only if all admitted. It reports the policy that binds: when
 * admitted the one with the least remaining, when denied the one with the longest wait (after which every
 * policy has room), and lists every policy's decision in `policies`.
 */
function combine(decisions: readonly Decision[]): Decision {
  if (decisions.length === 1) return decisions[0] as Decision
  const allowed = decisions.every((d) => d.allowed)
  let lead = decisions[0] as Decision
  for (const d of decisions) {
    if (allowed ? d.remaining < lead.remaining : d.retryAfterMs > lead.retryAfterMs) lead = d
  }
  return { ...lead, allowed, policies: decisions }
}

function resolvePolicies(options: RateLimiterOptions): Policy[] {
  if (options.policies === undefined) return [resolvePolicy(options as PolicyOptions)]
  const stray = POLICY_OPTION_NAMES.find((name) => options[name] !== undefined)
  if (stray !== undefined) {
    throw new OptionError(stray, options[stray], 'no policy options beside `policies`: put them in a policy')
  }
  if (!Array.isArray(options.policies) || options.policies.length === 0 || options.policies.length > 8) {
    throw new OptionError('policies', options.policies, 'an array of 1 to 8 policies (definePolicy objects)')
  }
  const policies = options.policies.map((p) => definePolicy(p))
  const bucketed = policies.find((p) => p.algorithm === 'bucketed')
  if (bucketed) {
    throw new OptionError(
      'policies',
      bucketed.name,
      "sliding-log policies: several policies in one call use the log's script",
    )
  }
  const names = new Set(policies.map((p) => p.name))
  if (names.size !== policies.length) {
    throw new OptionError('policies', policies.map((p) => p.name).join(', '), 'policies with distinct names')
  }
  return policies
}

function resolveStore(store: unknown): Store {
  if (store === undefined) return memoryStore()
  if (isStore(store)) return store
  const looksLikeClient = typeof (store as { evalsha?: unknown } | null)?.evalsha === 'function'
  throw new OptionError(
    'store',
    store,
    looksLikeClient
      ? 'a store: wrap the ioredis client as redisStore(client)'
      : 'a store made by redisStore(client) or memoryStore()',
  )
}

/** An error's message without our prefix or a closing full stop, to be quoted inside a sentence. */
function messageOf(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).replace(/^fleetlimit: /, '').replace(/\.+$/, '')
}
