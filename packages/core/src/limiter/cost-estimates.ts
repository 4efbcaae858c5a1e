// Estimated costs: per key, a high percentile of the costs settled lately, which `cost: 'estimate'` reserves.
import { OptionError } from '../common/errors.js'
import { checkInteger, checkOptionNames, isPlainObject, optionNames } from '../common/validate.js'
import type { Policy } from './policy.js'

export interface EstimateOptions {
  /**
   * What a key reserves until it has settled costs to learn from: a whole number from 1 to the policy's limit,
   * such as what a typical call costs.
   */
  initial: number
  /** The share of a key's recent settled costs its estimate covers: above 0, at most 1. Default 0.9 (the p90). */
  percentile?: number
  /** How many of a key's latest settled costs the percentile is taken over: 10 to 1,000. Default 100. */
  samples?: number
  /** With several rate policies: the name of the one whose cost is estimated (a tokens-per-minute policy). */
  policy?: string
}

/** The estimate options, checked against the limiter's policies. */
export interface ResolvedEstimate {
  readonly initial: number
  readonly percentile: number
  readonly samples: number
  /** The estimated policy's name, and its index among the limiter's policies. */
  readonly policy: string
  readonly index: number
}

const ESTIMATE_OPTION_NAMES = optionNames<EstimateOptions>({
  initial: true,
  percentile: true,
  samples: true,
  policy: true,
})

/** Settled costs a key needs before its estimate replaces `initial` (fewer when `samples` is lower). */
export const WARMUP = 10

/** The settled costs one limiter keeps in all (8 bytes each, about 3 MB): `samples` per key, so 4,096 keys at 100. */
export const SAMPLE_BUDGET = 409_600

export function resolveEstimate(value: unknown, policies: readonly Policy[]): ResolvedEstimate | undefined {
  if (value === undefined) return undefined
  if (!isPlainObject(value)) {
    throw new OptionError('estimate', value, 'an object such as { initial: 500, percentile: 0.9 }')
  }
  checkOptionNames(value, 'estimate', ESTIMATE_OPTION_NAMES)
  const rates = policies.filter((p) => p.concurrency === undefined)
  const named = value.policy
  let policy: Policy | undefined
  if (named === undefined) {
    if (rates.length !== 1) {
      throw new OptionError(
        'estimate.policy',
        named,
        `the name of the rate policy whose cost is estimated (${rates.map((p) => p.name).join(', ')})`,
      )
    }
    policy = rates[0]
  } else {
    policy = rates.find((p) => p.name === named)
    if (policy === undefined) {
      throw new OptionError(
        'estimate.policy',
        named,
        `one of this limiter's rate policies: ${rates.map((p) => p.name).join(', ')}`,
      )
    }
  }
  const estimated = policy as Policy
  if (estimated.algorithm === 'bucketed') {
    throw new OptionError(
      'estimate',
      estimated.name,
      'a sliding-log policy: the bucketed algorithm does not settle, so nothing would be learned',
    )
  }
  const percentile = value.percentile ?? 0.9
  if (typeof percentile !== 'number' || !(percentile > 0 && percentile <= 1)) {
    throw new OptionError('estimate.percentile', percentile, 'a number above 0 and at most 1, such as 0.9 for the p90')
  }
  return Object.freeze({
    initial: checkInteger(value.initial, 'estimate.initial', 1, estimated.limit),
    percentile,
    samples: checkInteger(value.samples ?? 100, 'estimate.samples', 10, 1_000),
    policy: estimated.name,
    index: policies.indexOf(estimated),
  })
}

/** A key's latest settled costs, in a ring, and its percentile once worked out (until the next cost). */
interface Entry {
  readonly costs: number[]
  next: number
  value: number | undefined
}

/**
 * Per key, the `percentile` of the latest `samples` settled costs (nearest rank: the smallest cost that at least
 * that share of them do not exceed), or `initial` until WARMUP costs came. Bounded: SAMPLE_BUDGET / samples keys,
 * the key that learned least recently dropped first.
 */
export class CostEstimates {
  readonly #keys = new Map<string, Entry>()
  readonly #warmup: number
  readonly maxKeys: number

  constructor(
    readonly percentile: number,
    readonly initial: number,
    readonly samples: number,
  ) {
    this.#warmup = Math.min(WARMUP, samples)
    this.maxKeys = Math.floor(SAMPLE_BUDGET / samples)
  }

  get size(): number {
    return this.#keys.size
  }

  /** The key's estimate now. */
  estimate(key: string): number {
    const entry = this.#keys.get(key)
    if (entry === undefined || entry.costs.length < this.#warmup) return this.initial
    entry.value ??= percentileOf(entry.costs, this.percentile)
    return entry.value
  }

  /** Learns one settled cost of the key: a whole number of 0 or more (the caller checked it). */
  add(key: string, cost: number): void {
    let entry = this.#keys.get(key)
    if (entry === undefined) {
      if (this.#keys.size >= this.maxKeys) this.#keys.delete(this.#keys.keys().next().value as string)
      entry = { costs: [], next: 0, value: undefined }
    } else {
      // Kept last in the map's order: the key that learned least recently goes first.
      this.#keys.delete(key)
    }
    this.#keys.set(key, entry)
    if (entry.costs.length < this.samples) entry.costs.push(cost)
    else entry.costs[entry.next] = cost
    entry.next = (entry.next + 1) % this.samples
    entry.value = undefined
  }
}

/** The nearest-rank percentile of costs: the cost at rank ceil(p × n) in ascending order. */
export function percentileOf(costs: readonly number[], percentile: number): number {
  const sorted = [...costs].sort((a, b) => a - b)
  // 0.9 × 100 is 90.00000000000001 in floating point: a hair below keeps the rank 90.
  const rank = Math.max(1, Math.ceil(percentile * sorted.length - 1e-9))
  return sorted[rank - 1] as number
}
