import { createAcquireQueue } from './acquire-queue.js'
import type { Decision, DecisionSource } from './decision.js'
import { parseDuration } from './duration.js'
import { OptionError, StoreError } from './errors.js'
import { buildKey, type KeyInput } from './keys.js'
import { memoryStore } from './memory-store.js'
import { checkInteger, checkOptionNames } from './options.js'
import { POLICY_OPTION_NAMES, type Policy, type PolicyOptions, resolvePolicy } from './policy.js'
import { isStore, type Store, type WindowResult } from './store.js'

export interface RateLimiterOptions extends PolicyOptions {
  /** Where the windows live. Default: a new `memoryStore()` (this process only). */
  store?: Store
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
  readonly policy: Policy
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

const LIMITER_OPTION_NAMES = ['store', ...POLICY_OPTION_NAMES] as const

class DeadlineExceeded extends StoreError {}

/** Builds a limiter for one policy on one store; every option is validated here, once. */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  checkOptionNames(options, 'createRateLimiter', LIMITER_OPTION_NAMES)
  const policy = resolvePolicy(options)
  const store = resolveStore(options.store)
  const fallback = policy.fallback && memoryStore()
  const { name, limit, window: windowMs, timeoutMs } = policy

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

  const toDecision = (result: WindowResult, source: DecisionSource, decidedLimit = limit): Decision => ({
    allowed: result.allowed,
    limit: decidedLimit,
    remaining: result.remaining,
    retryAfterMs: result.retryAfterMs,
    resetMs: result.resetMs,
    source,
    policy: name,
  })

  function count(decision: Decision): Decision {
    counters.decisions++
    if (decision.allowed) counters.allowed++
    else counters.denied++
    return decision
  }

  async function degrade(key: string, cost: number, error: unknown): Promise<Decision> {
    counters.storeErrors++
    if (error instanceof DeadlineExceeded) counters.timeouts++
    const reason = error instanceof Error ? error.message : String(error)
    if (policy.onStoreError === 'fail-closed') {
      throw new StoreError(`the store failed a decision for policy "${name}": ${reason}`, { cause: error })
    }
    counters.degraded++
    if (fallback && policy.fallback) {
      const request = { key, limit: policy.fallback.limit, windowMs, cost: Math.min(cost, policy.fallback.limit) }
      return count(toDecision(await fallback.consume(request), 'fallback', policy.fallback.limit))
    }
    // Unknown numbers are not invented: the decision says only that it was admitted unlimited.
    return count({ allowed: true, limit, remaining: limit, retryAfterMs: 0, resetMs: 0, source: 'open', policy: name })
  }

  async function decide(key: string, cost: number): Promise<Decision> {
    let result: WindowResult
    try {
      counters.storeCalls++
      result = await withDeadline(store.consume({ key, limit, windowMs, cost }), timeoutMs)
    } catch (error) {
      return degrade(key, cost, error)
    }
    return count(toDecision(result, 'store'))
  }

  function resolveCost(options: ConsumeOptions | undefined, accepted: readonly string[]): number {
    if (options === undefined) return policy.cost
    checkOptionNames(options, 'options', accepted)
    return options.cost === undefined ? policy.cost : checkInteger(options.cost, 'cost', 1, limit)
  }

  const acquireInQueue = createAcquireQueue(decide)

  return {
    policy,
    async consume(key, options) {
      const cost = resolveCost(options, ['cost'])
      return decide(buildKey(name, key), cost)
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
      return acquireInQueue(buildKey(name, key), cost, maxWaitMs, signal)
    },
    async peek(key) {
      const result = await withDeadline(
        store.peek({ key: buildKey(name, key), limit, windowMs, cost: 1 }),
        timeoutMs,
      ).catch((error: unknown) => {
        throw new StoreError(`the store failed a peek for policy "${name}"`, { cause: error })
      })
      return toDecision(result, 'store')
    },
    async reset(key) {
      const storeKey = buildKey(name, key)
      await Promise.all([store.reset(storeKey), fallback?.reset(storeKey)])
    },
    stats: () => ({ ...counters }),
  }
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
