import { createAcquireQueue } from './acquire-queue.js'
import type { Decision, DecisionSource } from './decision.js'
import { parseDuration } from './duration.js'
import { OptionError, StoreError } from './errors.js'
import { buildKey, type KeyInput } from './keys.js'
import { memoryStore } from './memory-store.js'
import { checkInteger, checkOptionNames } from './options.js'
import { definePolicy, POLICY_OPTION_NAMES, type Policy, type PolicyOptions, resolvePolicy } from './policy.js'
import { isStore, type Store, type WindowRequest, type WindowResult } from './store.js'

export interface RateLimiterOptions extends Partial<PolicyOptions> {
  /** Where the windows live. Default: a new `memoryStore()` (this process only). */
  store?: Store
  /**
   * Several policies decided together (instead of the policy options): a call is admitted only if
   * every policy admits it, and only then counted in all of them, in one store call.
   */
  policies?: readonly (Policy | PolicyOptions)[]
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
  readonly decisions: number
  readonly allowed: number
  readonly denied: number
  readonly storeCalls: number
  readonly localHits: number
  readonly degraded: number
  readonly storeErrors: number
  readonly timeouts: number
}

export interface RateLimiter {
  /** The policy (the first one, with `policies`). */
  readonly policy: Policy
  readonly policies: readonly Policy[]
  /** Admits and counts `cost` units now, or denies with the exact wait. Never waits. */
  consume(key: KeyInput, options?: ConsumeOptions): Promise<Decision>
  /** Waits, first-in first-out with this process's other waiters on the key, until admitted. */
  acquire(key: KeyInput, options?: AcquireOptions): Promise<Decision>
  /** The decision one unit would get now, without consuming anything. */
  peek(key: KeyInput): Promise<Decision>
  /** Forgets every unit of the key. */
  reset(key: KeyInput): Promise<void>
  stats(): LimiterStats
}

const LIMITER_OPTION_NAMES = ['store', 'policies', ...POLICY_OPTION_NAMES] as const

class DeadlineExceeded extends StoreError {}

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

  const counters = {
    decisions: 0,
    allowed: 0,
    denied: 0,
    storeCalls: 0,
    localHits: 0,
    degraded: 0,
    storeErrors: 0,
    timeouts: 0,
  }

  const keysOf = (input: KeyInput): string[] =>
    policies.map((p) => {
      const tenantOnly = p.scope === 'tenant' && typeof input === 'object' && input !== null
      return buildKey(p.name, tenantOnly ? { tenant: input.tenant } : input)
    })

  const requestsOf = (keys: readonly string[], cost: number): WindowRequest[] =>
    policies.map((p, i) => ({ key: keys[i] as string, limit: p.limit, windowMs: p.window, cost }))

  function count(decision: Decision): Decision {
    counters.decisions++
    if (decision.allowed) counters.allowed++
    else counters.denied++
    return decision
  }

  async function degrade(keys: readonly string[], cost: number, error: unknown): Promise<Decision> {
    counters.storeErrors++
    if (error instanceof DeadlineExceeded) counters.timeouts++
    const reason = error instanceof Error ? error.message : String(error)
    if (failClosed) {
      throw new StoreError(`the store failed a decision for policy "${first.name}": ${reason}`, { cause: error })
    }
    counters.degraded++
    const withFallback = policies.flatMap((p, i) => (p.fallback ? [{ policy: p, key: keys[i] as string }] : []))
    if (fallback && withFallback.length > 0) {
      // A cost above a fallback limit counts as that whole limit, so it can still be admitted alone.
      const requests = withFallback.map(({ policy, key }) => {
        const limit = (policy.fallback as { limit: number }).limit
        return { key, limit, windowMs: policy.window, cost: Math.min(cost, limit) }
      })
      const results = await fallback.consume(requests)
      return count(
        combine(
          results.map((result, i) =>
            toDecision(result, 'fallback', (withFallback[i] as { policy: Policy }).policy, true),
          ),
        ),
      )
    }
    // Unknown numbers are not invented: the decision says only that it was admitted unlimited.
    const { limit, name } = first
    return count({ allowed: true, limit, remaining: limit, retryAfterMs: 0, resetMs: 0, source: 'open', policy: name })
  }

  async function decide(keys: readonly string[], cost: number): Promise<Decision> {
    let results: WindowResult[]
    try {
      counters.storeCalls++
      results = await withDeadline(store.consume(requestsOf(keys, cost)), timeoutMs)
    } catch (error) {
      return degrade(keys, cost, error)
    }
    return count(combine(results.map((result, i) => toDecision(result, 'store', policies[i] as Policy))))
  }

  function resolveCost(options: ConsumeOptions | undefined, accepted: readonly string[]): number {
    if (options === undefined) return defaultCost
    checkOptionNames(options, 'options', accepted)
    return options.cost === undefined ? defaultCost : checkInteger(options.cost, 'cost', 1, maxCost)
  }

  const acquireInQueue = createAcquireQueue(decide)

  return {
    policy: first,
    policies,
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
      const results = await withDeadline(store.peek(requestsOf(keysOf(key), 1)), timeoutMs).catch((error: unknown) => {
        throw new StoreError(`the store failed a peek for policy "${first.name}"`, { cause: error })
      })
      return combine(results.map((result, i) => toDecision(result, 'store', policies[i] as Policy)))
    },
    async reset(key) {
      const keys = keysOf(key)
      await Promise.all(keys.flatMap((storeKey) => [store.reset(storeKey), fallback?.reset(storeKey)]))
    },
    stats: () => ({ ...counters }),
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

/** Rejects with a DeadlineExceeded when `promise` has not settled within `ms`. */
function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new DeadlineExceeded(`no answer within timeoutMs (${ms} ms)`)), ms)
    promise.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}
