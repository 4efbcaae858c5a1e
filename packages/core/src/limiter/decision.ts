import type { WindowResult } from '../store/store.js'
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
  /** With several policies: each one's decision, in the limiter's order. */
  readonly policies?: readonly Decision[]
}

/** A policy's decision from its window's result under `limit`; a fallback decision reports the fallback limit. */
export function toDecision(
  result: WindowResult,
  source: DecisionSource,
  policy: Policy,
  limit: number = policy.limit,
): Decision {
  return {
    allowed: result.allowed,
    limit: source === 'fallback' ? (policy.fallback?.limit ?? policy.limit) : limit,
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
export function combine(decisions: readonly Decision[]): Decision {
  if (decisions.length === 1) return decisions[0] as Decision
  const allowed = decisions.every((d) => d.allowed)
  let lead = decisions[0] as Decision
  for (const d of decisions) {
    if (allowed ? d.remaining < lead.remaining : d.retryAfterMs > lead.retryAfterMs) lead = d
  }
  return { ...lead, allowed, policies: decisions }
}
