// `cost: 'estimate'`: a call reserves its key's estimated cost (cost-estimates.ts), and each settle teaches it.
import { isFleetlimitError, OptionError } from '../common/errors.js'
import { isPlainObject } from '../common/validate.js'
import type { Receipt, SettleOptions, SettleResult } from './after-call.js'
import { type CallPlan, type CallPlans, newPlan } from './call-plans.js'
import { CostEstimates } from './cost-estimates.js'
import type { Decision } from './decision.js'
import type { KeyInput } from './keys.js'
import type { LimiterConfig } from './limiter-options.js'
import type { ConsumeOptions } from './limiter-types.js'
import { MAX_LIMIT } from './policy.js'
import { Receipted } from './receipts.js'

export interface EstimatedCallsDeps {
  readonly config: Pick<LimiterConfig, 'policies' | 'estimate'>
  readonly plans: CallPlans
  /** What the limiter stamps receipts with (see Receipted). */
  readonly owner: object
  receiptOf(decision: unknown): Receipt | undefined
}

/**
 * The estimated calls of one limiter, and what a settle teaches them. The estimate of a key is this process's:
 * learned from the settles made through this limiter, per store key of the estimated policy's window (so per
 * tenant, route and policy).
 */
export function createEstimatedCalls(deps: EstimatedCallsDeps) {
  const { plans } = deps
  const { estimate, policies } = deps.config
  const estimates = estimate && new CostEstimates(estimate.percentile, estimate.initial, estimate.samples)
  // Receipts whose true cost was learned: a settle sent again (a retry after a timeout) teaches nothing more.
  const learned = new WeakSet<Receipt>()

  /** A call's plan: at the key's estimate for `cost: 'estimate'`, else as the limiter's plans make it. */
  function planOf(key: KeyInput, options: ConsumeOptions | undefined, accepted: readonly string[]): CallPlan {
    // Read in place, not through a helper: every consume passes here.
    if (options?.cost !== 'estimate') return plans.planOf(key, options, accepted)
    if (estimates === undefined || estimate === undefined) {
      throw new OptionError(
        'cost',
        'estimate',
        "a whole number: `cost: 'estimate'` needs the limiter option `estimate` (such as { initial: 500 })",
      )
    }
    const { cost: _, ...rest } = options as ConsumeOptions
    // With no other option, the key's kept plan gives the windows (its keys encoded once).
    const base = plans.planOf(key, Object.keys(rest).length === 0 ? undefined : rest, accepted)
    const window = base.windows[estimate.index] as CallPlan['windows'][number]
    const reserved = Math.max(1, Math.min(estimates.estimate(window.key), window.limit))
    if (base.windows.length === 1) return newPlan(base.windows, reserved)
    // As a cost map would: the other policies take their own cost, an in-flight one its one slot.
    const costs = base.windows.map(({ policy }, i) =>
      i === estimate.index ? reserved : policy.concurrency !== undefined ? 1 : policy.cost,
    )
    return newPlan(base.windows, Math.max(...costs), costs)
  }

  /** The decision with what it reserved; its receipt (and slots' extend) still found by the limiter. */
  function stampOne(decision: Decision, reserved: number): Decision {
    const stamped: Decision = { ...decision, reserved }
    if (decision.extend) Object.defineProperty(stamped, 'extend', { value: decision.extend, configurable: true })
    const receipt = deps.receiptOf(decision)
    if (receipt !== undefined) new Receipted(stamped, receipt, deps.owner)
    return stamped
  }

  /** Learns the estimated policy's true cost from a settle, once per receipt; a cost of 0 (not charged) teaches nothing. */
  function learn(receipt: Receipt, options: SettleOptions | undefined): void {
    if (estimates === undefined || estimate === undefined || learned.has(receipt)) return
    const cost: unknown = options?.cost
    const units =
      typeof cost === 'number'
        ? cost
        : isPlainObject(cost) && Object.hasOwn(cost, estimate.policy)
          ? cost[estimate.policy]
          : undefined
    if (typeof units !== 'number' || !Number.isInteger(units) || units <= 0 || units > MAX_LIMIT) return
    const index = receipt.names ? receipt.names.indexOf(estimate.policy) : policies.length === 1 ? 0 : -1
    const request = receipt.requests[index]
    if (request === undefined) return
    learned.add(receipt)
    estimates.add(request.key, units)
  }

  return {
    planOf,
    /** A call's decision: with `reserved` (the estimated policy's cost in its plan) for `cost: 'estimate'`. */
    stamp(options: ConsumeOptions | undefined, decided: Promise<Decision>, plan: CallPlan): Promise<Decision> {
      if (options?.cost !== 'estimate' || estimate === undefined) return decided
      const reserved = plan.costs ? (plan.costs[estimate.index] as number) : plan.cost
      return decided.then((decision) => stampOne(decision, reserved))
    },
    /**
     * Settles through `send` (the limiter's settle), and teaches the estimate the true cost: once the store
     * answered, or failed (the cost is known all the same), never from a cost the settle refused.
     */
    settle(
      decision: Decision,
      options: SettleOptions,
      send: (decision: Decision, options: SettleOptions) => Promise<SettleResult>,
    ): Promise<SettleResult> {
      const sent = send(decision, options)
      const receipt = deps.receiptOf(decision)
      if (receipt === undefined) return sent
      return sent.then(
        (result) => {
          learn(receipt, options)
          return result
        },
        (error: unknown) => {
          if (!isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION')) learn(receipt, options)
          throw error
        },
      )
    },
  }
}
