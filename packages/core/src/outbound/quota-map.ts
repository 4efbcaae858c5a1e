// Which policy of a limiter each quota an upstream states bounds: its requests quota the policy counted per
// request, its tokens quota the other one (an LLM API's requests and tokens per minute), or as limitedFetch's
// `quotas` option names them. Pure: no I/O.
import { OptionError } from '../common/errors.js'
import { isPlainObject } from '../common/validate.js'
import type { Quota } from './quota-headers.js'

/** limitedFetch's `quotas`: from a quota's name to the policy it bounds, or false for none (it still pauses). */
export type QuotaMap = Readonly<Record<string, string | false>>

/** A policy a quota may bound: its name, its window, and what one call of this limitedFetch costs in it. */
export interface Target {
  readonly name: string
  readonly window: number
  readonly cost: number
}

/** Quota names are short: an IETF policy name, 'requests' or 'tokens'. */
const MAX_NAME = 64
const MAX_ENTRIES = 32

/** What a quota is looked up by in `quotas`: its name, or its unit when it has none (x-ratelimit-limit, draft 6). */
export const quotaName = (quota: Quota): string => quota.name || quota.unit

/** limitedFetch's `quotas`, checked against the policies that can learn a limit; frozen. */
export function checkQuotas(value: unknown, targets: readonly Pick<Target, 'name'>[]): QuotaMap | undefined {
  if (value === undefined) return undefined
  const names = targets.map((t) => `'${t.name}'`).join(', ')
  if (targets.length === 0) {
    throw new OptionError(
      'quotas',
      value,
      "a limiter with a rate policy (in-flight slots and calendar periods learn no limit), and adapt: 'headers'",
    )
  }
  if (!isPlainObject(value)) {
    throw new OptionError(
      'quotas',
      value,
      `a plain object from a quota's name ('requests', 'tokens', or an IETF policy's) to a policy name (${names}) or false`,
    )
  }
  const entries = Object.entries(value)
  if (entries.length > MAX_ENTRIES) throw new OptionError('quotas', value, `at most ${MAX_ENTRIES} quota names`)
  for (const [quota, policy] of entries) {
    if (quota === '' || quota.length > MAX_NAME) {
      throw new OptionError('quotas', quota, `quota names of 1 to ${MAX_NAME} characters`)
    }
    if (policy !== false && !targets.some((t) => t.name === policy)) {
      throw new OptionError(
        `quotas.${quota}`,
        policy,
        `the name of a policy that learns a limit (${names}), or false for none`,
      )
    }
  }
  return Object.freeze({ ...value }) as QuotaMap
}

/**
 * The policy (an index into `targets`) each quota bounds, or -1 for none. Named in `quotas`, when given: a quota
 * it leaves out bounds none. By default: a quota named as a policy bounds it; else, with one policy, every request
 * quota bounds it; with several, a request quota bounds the policy a call counts once in (cost 1), a tokens quota
 * the one it counts more in, and when more than one fits, the one of the quota's window; none when that leaves a
 * doubt (name them in `quotas` then).
 */
export function createQuotaRouter(targets: readonly Target[], quotas: QuotaMap | undefined): (quota: Quota) => number {
  const indexOf = (name: string | false | undefined) => (name ? targets.findIndex((t) => t.name === name) : -1)
  if (quotas !== undefined) {
    return (quota) => {
      const name = quotaName(quota)
      return Object.hasOwn(quotas, name) ? indexOf(quotas[name]) : -1
    }
  }
  const perRequest = targets.filter((t) => t.cost === 1)
  const perUnit = targets.filter((t) => t.cost !== 1)
  const one = (candidates: readonly Target[], windowMs: number | undefined): number => {
    if (candidates.length === 1) return targets.indexOf(candidates[0] as Target)
    const windowed = candidates.filter((t) => t.window === windowMs)
    return windowed.length === 1 ? targets.indexOf(windowed[0] as Target) : -1
  }
  return (quota) => {
    const named = quota.name ? indexOf(quota.name) : -1
    if (named >= 0) return named
    if (targets.length === 1) return quota.unit === 'requests' ? 0 : -1
    if (quota.unit === 'requests') return one(perRequest, quota.windowMs)
    if (quota.unit === 'tokens') return one(perUnit, quota.windowMs)
    return -1
  }
}
