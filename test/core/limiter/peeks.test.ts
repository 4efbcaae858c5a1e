import { memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'
import { createCallPlans } from '../../../packages/core/src/limiter/call-plans.js'
import type { LearnedLimit } from '../../../packages/core/src/limiter/learned-limits.js'
import { createPeeks } from '../../../packages/core/src/limiter/peeks.js'
import { resolvePolicy } from '../../../packages/core/src/limiter/policy.js'

describe('limiter/peeks: peek under the learned limit', () => {
  const policy = resolvePolicy({ limit: 10, window: '1m', name: 'up' })
  const plans = createCallPlans([policy], 1, (cost) => cost as number)

  function peeks(learned: LearnedLimit | undefined) {
    const store = memoryStore()
    const peek = createPeeks({
      store,
      plans,
      askStore: (_windows, send) => send(),
      learned: async () => (learned === undefined ? undefined : [learned]),
      policies: [policy],
    })
    return { store, peek }
  }

  it('decides one unit under the policy’s limit when nothing was learned', async () => {
    const { peek } = peeks(undefined)
    const decision = await peek.peek('t', undefined)
    expect(decision).to.deep.include({ allowed: true, limit: 10, remaining: 10 })
    expect(decision.learned).to.equal(undefined)
  })

  it('decides under the learned limit, or the call’s own when lower, and says what was learned', async () => {
    const { peek, store } = peeks({ limit: 4, source: 'headers' })
    await store.consume([
      { key: plans.windowsOf('t', undefined)[0]?.key as string, limit: 10, windowMs: 60_000, cost: 3 },
    ])
    expect(await peek.peek('t', undefined)).to.deep.include({
      limit: 4,
      remaining: 1,
      learned: { limit: 4, source: 'headers' },
    })
    expect((await peek.peek('t', { limit: 2 })).limit).to.equal(2)
    expect((await peek.peek('t', { limit: 8 })).limit).to.equal(4)
  })
})
