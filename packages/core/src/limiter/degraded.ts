import { memoryStore } from '../store/memory-store.js'
import { combine, type Decision, toDecision } from './decision.js'
import type { Policy } from './policy.js'
import type { ShareWindow } from './priority-classes.js'

/** One window of a call: a policy, the store key it counts this call under, and this call's limit in it. */
export interface Window {
  readonly policy: Policy
  readonly key: string
  /** The policy's limit, or the one the call named (a tenant's plan). */
  readonly limit: number
  /** A calendar policy's anchor the call named (a tenant's billing day); unset for the policy's own start. */
  readonly anchor?: number
  /** Set on a priority class's share window (the last of a call's windows): its class and its siblings' keys. */
  readonly share?: ShareWindow
}

/** How a failing-open limiter decides without its store. */
export interface DegradedMode {
  decide(windows: readonly Window[], cost: number): Promise<Decision>
  reset(key: string): Promise<void>
}

/**
 * Decisions without the store, for a limiter that fails open: under each policy's `fallback` limit in a strict
 * window of this process (`source: 'fallback'`), or, when no policy has one, admitted with no numbers invented
 * (`source: 'open'`).
 */
export function createDegradedMode(policies: readonly [Policy, ...Policy[]]): DegradedMode {
  const fallback = policies.some((p) => p.fallback) ? memoryStore() : undefined
  const [first] = policies
  return {
    async decide(windows, cost) {
      // A class's share window is the store's: the fallback counts the policy's window alone.
      const limited = windows.filter((w) => w.policy.fallback && w.share === undefined)
      if (fallback && limited.length > 0) {
        // A cost above a fallback limit counts as that whole limit, so it can still be admitted alone.
        const requests = limited.map(({ policy, key, anchor }) => {
          const limit = (policy.fallback as { limit: number }).limit
          const request = { key, limit, windowMs: policy.window, cost: Math.min(cost, limit) }
          // A calendar policy's fallback counts in its periods too.
          if (policy.period === undefined) return request
          const period = { unit: policy.period, timeZone: policy.timeZone as string }
          return { ...request, period: anchor === undefined ? period : { ...period, anchor } }
        })
        const results = await fallback.consume(requests)
        return combine(results.map((result, i) => toDecision(result, 'fallback', (limited[i] as Window).policy)))
      }
      const { limit, name } = first
      return { allowed: true, limit, remaining: limit, retryAfterMs: 0, resetMs: 0, source: 'open', policy: name }
    },
    reset: async (key) => {
      await fallback?.reset(key)
    },
  }
}
