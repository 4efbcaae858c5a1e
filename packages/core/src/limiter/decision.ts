import type { WindowResult } from '../store/store.js'
import type { LearnedLimit } from './learned-limits.js'
import type { Policy } from './policy.js'

/** Who made a decision: the shared store, this process's local tier, the fail-open fallback window, or nobody (failing open unlimited). */
export type DecisionSource = 'store' | 'local' | 'fallback' | 'open'

export interface Decision {
  readonly allowed: boolean
  /** The limit this decision applied: the call's (a tenant's plan) or the policy's; the fallback limit when `source` is 'fallback'. */
  readonly limit: number
  /** Units left in the window after this decision. */
  readonly remaining: number
  /** 0 when allowed; else the exact wait in ms until this cost fits. */
  readonly retryAfterMs: number
  /** Time in ms until the window holds no unit of this key (0 when empty). */
  readonly resetMs: number
  readonly source: DecisionSource
  /** The name of the policy that made this decision: with several policies, the one that binds. */
  readonly policy: string
  /**
   * With several policies: each one's decision, in the limiter's order. A denial from the local tier's deny cache
   * lists only the policies that denied: the others' figures have changed with the calls counted since.
   */
  readonly policies?: readonly Decision[]
  /** A policy in shadow mode would have denied this call, which was let through (`allowed` is true). */
  readonly shadowDenied?: boolean
  /** In `policies`: this policy is in shadow mode, so its `allowed` did not decide the call. */
  readonly shadow?: boolean
  /**
   * On an admission that holds in-flight slots: keeps them held `ms` from now (default: the slot life), for a
   * call that runs long. Resolves false once they are gone (released, or expired). Not enumerable.
   */
  readonly extend?: (ms?: number | string) => Promise<boolean>
  /**
   * On a peek: the limit the fleet learned of the key's upstream (limitedFetch's `adapt`), below the policy's, and
   * where it came from; the decision is made under it.
   */
  readonly learned?: LearnedLimit
  /** The priority class the call was decided in, for a policy with `priorities`. */
  readonly priority?: string
  /** On a call with `cost: 'estimate'`: the units it asked for in the estimated policy, from the key's estimate. */
  readonly reserved?: number
}

/** A policy's decision from its window's result under `limit`; a fallback decision reports the fallback limit. */
export function toDecision(
  result: WindowResult,
  source: DecisionSource,
  policy: Policy,
  limit: number = policy.limit,
): Decision {
  const decision = {
    allowed: result.allowed,
    limit: source === 'fallback' ? (policy.fallback?.limit ?? policy.limit) : limit,
    remaining: result.remaining,
    retryAfterMs: result.retryAfterMs,
    resetMs: result.resetMs,
    source,
    policy: policy.name,
  }
  return policy.shadow ? { ...decision, shadow: true } : decision
}

/**
 * The decision a caller acts on: a denial by shadow policies alone is let through (`shadowDenied`), with no
 * wait; any other decision is as it is.
 */
export function enforce(decision: Decision): Decision {
  if (decision.allowed || !decision.shadow) return decision
  const { shadow: _, ...rest } = decision
  return { ...rest, allowed: true, retryAfterMs: 0, shadowDenied: true }
}

/**
 * One decision from one per policy: admitted only if all admitted. It reports the policy that binds: when
 * admitted the one with the least remaining, when denied the one with the longest wait (after which every
 * policy has room), and lists every policy's decision in `policies`.
 */
export function combine(decisions: readonly Decision[]): Decision {
  if (decisions.length === 1) return decisions[0] as Decision
  // Shadow policies decide nothing while an enforced one is there: only they lead then, and only they admit.
  const enforced = decisions.filter((d) => !d.shadow)
  const deciding = enforced.length > 0 ? enforced : decisions
  const allowed = deciding.every((d) => d.allowed)
  let lead = deciding[0] as Decision
  for (const d of deciding) {
    if (allowed ? d.remaining < lead.remaining : d.retryAfterMs > lead.retryAfterMs) lead = d
  }
  const { shadow: _, ...top } = lead
  const combined = { ...top, allowed, policies: decisions }
  if (enforced.length === 0)
    return allowed ? combined : { ...combined, allowed: true, retryAfterMs: 0, shadowDenied: true }
  const shadowDenied = allowed && decisions.some((d) => d.shadow && !d.allowed)
  return shadowDenied ? { ...combined, shadowDenied } : combined
}
