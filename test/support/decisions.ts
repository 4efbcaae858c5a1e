import type { Decision } from '@fleetlimit/core'

/** A fresh admitted decision from the store (limit 5, 4 remaining), for tests of what comes after a decision. */
export const admittedDecision = (policy = 'p'): Decision => ({
  allowed: true,
  limit: 5,
  remaining: 4,
  retryAfterMs: 0,
  resetMs: 1_000,
  source: 'store',
  policy,
})
