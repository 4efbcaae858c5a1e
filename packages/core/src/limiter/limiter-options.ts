import { OptionError } from '../common/errors.js'
import type { Logger } from '../common/logger.js'
import { checkInteger, checkOptionNames, optionNames } from '../common/validate.js'
import { memoryStore } from '../store/memory-store.js'
import { contractGap, contractVersions, isStore, STORE_CONTRACT_VERSION, type Store } from '../store/store.js'
import { type ResolvedEstimate, resolveEstimate } from './cost-estimates.js'
import type { RateLimiterOptions } from './limiter-types.js'
import { resolveLocal } from './local-tier.js'
import {
  bareDurations,
  checkCost,
  definePolicy,
  MAX_LIMIT,
  POLICY_OPTION_NAMES,
  POLICY_OPTIONS,
  type Policy,
  type PolicyOptions,
  resolvePolicy,
} from './policy.js'
import { checkPolicyNames } from './policy-registry.js'

const LIMITER_OPTION_NAMES = optionNames<RateLimiterOptions>({
  ...POLICY_OPTIONS,
  store: true,
  policies: true,
  logger: true,
  local: true,
  maxQueue: true,
  estimate: true,
})

/** A limiter's options, validated once, with what follows from its policies worked out. */
export interface LimiterConfig {
  readonly policies: readonly [Policy, ...Policy[]]
  readonly store: Store
  readonly logger: Logger
  readonly local: ReturnType<typeof resolveLocal>
  readonly maxQueue: number
  /** The strictest deadline among the policies: one store call decides them all. */
  readonly timeoutMs: number
  /** Fails closed if any policy does. */
  readonly failClosed: boolean
  /** The cost of a call that names none, and the largest a call may name. */
  readonly defaultCost: number
  readonly maxCost: number
  /** Checks the cost a call names. */
  checkCost(cost: unknown): number
  /** What `cost: 'estimate'` reserves, when the limiter estimates. */
  readonly estimate: ResolvedEstimate | undefined
}

export function resolveLimiterOptions(options: RateLimiterOptions): LimiterConfig {
  checkOptionNames(options, 'createRateLimiter', LIMITER_OPTION_NAMES)
  const policies = resolvePolicies(options)
  const [first] = policies
  const store = resolveStore(options.store)
  const logger = options.logger ?? console
  if (typeof logger?.warn !== 'function')
    throw new OptionError('logger', logger, 'an object with a warn(message) method')
  for (const policy of policies) warnBareDurations(policy, logger)
  checkPolicyNames(store, policies, logger)
  const rates = policies.filter((p) => p.concurrency === undefined)
  const defaultCost = defaultCostOf(policies)
  const maxCost = rates.length === 0 ? MAX_LIMIT : Math.min(...rates.map((p) => p.limit))
  const local = resolveLocal(options.local, first.limit, first.window)
  const check = (cost: unknown) => checkCost(cost, 'cost', maxCost)
  if (policies.length > 1) check(defaultCost)
  return Object.freeze({
    policies,
    store,
    logger,
    // Slots come back at any release, anywhere: a cached denial or a lease would outlive the answer it keeps.
    local: policies.length > rates.length ? undefined : local,
    maxQueue: checkInteger(options.maxQueue ?? 1_000, 'maxQueue', 1, 10_000_000),
    timeoutMs: Math.min(...policies.map((p) => p.timeoutMs)),
    failClosed: policies.some((p) => p.onStoreError === 'fail-closed'),
    defaultCost,
    maxCost,
    checkCost: check,
    estimate: resolveEstimate(options.estimate, policies),
  })
}

/**
 * The cost of a call that names none, in each rate window: the largest of the policies' own. Costs count in rate
 * windows; an in-flight window takes one slot, whatever the cost.
 */
export function defaultCostOf(policies: readonly Policy[]): number {
  const rates = policies.filter((p) => p.concurrency === undefined)
  return rates.length === 0 ? 1 : Math.max(...rates.map((p) => p.cost))
}

function resolvePolicies(options: RateLimiterOptions): [Policy, ...Policy[]] {
  if (options.policies === undefined) return [resolvePolicy(options as PolicyOptions)]
  const stray = POLICY_OPTION_NAMES.find((name) => options[name] !== undefined)
  if (stray !== undefined) {
    throw new OptionError(stray, options[stray], 'no policy options beside `policies`: put them in a policy')
  }
  if (!Array.isArray(options.policies) || options.policies.length === 0 || options.policies.length > 8) {
    throw new OptionError('policies', options.policies, 'an array of 1 to 8 policies (definePolicy objects)')
  }
  const policies = options.policies.map((p) => definePolicy(p)) as [Policy, ...Policy[]]
  const bucketed = policies.find((p) => p.algorithm === 'bucketed')
  if (bucketed && policies.length > 1) {
    throw new OptionError(
      'policies',
      bucketed.name,
      "sliding-log policies: several policies in one call use the log's script",
    )
  }
  const ranked = policies.filter((p) => p.priorities !== undefined)
  if (ranked.length > 1) {
    throw new OptionError(
      'policies',
      ranked.map((p) => p.name).join(', '),
      'priorities on one policy of a limiter at most: a call has one class',
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
  if (isStore(store)) {
    const gap = contractGap(store)
    if (gap === undefined) return store
    throw new OptionError(
      'store',
      store,
      `a store that keeps the store contract v${STORE_CONTRACT_VERSION} of @fleetlimit/core/store: ${gap}`,
    )
  }
  const other = typeof store === 'object' && store !== null ? contractVersions(store)[0] : undefined
  if (other !== undefined) {
    throw new OptionError(
      'store',
      store,
      `a store of contract v${STORE_CONTRACT_VERSION}: this store implements contract v${other}; this ` +
        `@fleetlimit/core speaks v${STORE_CONTRACT_VERSION}: install matching versions of @fleetlimit/core and of ` +
        'the package that made the store',
    )
  }
  const looksLikeClient = typeof (store as { evalsha?: unknown } | null)?.evalsha === 'function'
  throw new OptionError(
    'store',
    store,
    looksLikeClient
      ? 'a store: wrap the ioredis client as redisStore(client)'
      : 'a store made by redisStore(client) or memoryStore()',
  )
}

/** What each logger was told about bare durations: once per policy and option, however many limiters use it. */
const told = new WeakMap<Logger, Set<string>>()

/** `window: 60` is 60 ms: said once, since seconds were most likely meant (rate-limiter-flexible's `duration`). */
function warnBareDurations(policy: Policy, logger: Logger): void {
  for (const { option, ms } of bareDurations(policy)) {
    const message =
      `fleetlimit: policy "${policy.name}" has \`${option}: ${ms}\`, which is ${ms} milliseconds: a number is ` +
      `milliseconds. If you meant ${ms} seconds, write \`${option}: '${ms}s'\`; to keep ${ms} ms, write ` +
      `\`${option}: '${ms}ms'\`, which says so.`
    const said = told.get(logger) ?? new Set<string>()
    told.set(logger, said)
    if (said.has(message)) continue
    said.add(message)
    logger.warn(message)
  }
}
