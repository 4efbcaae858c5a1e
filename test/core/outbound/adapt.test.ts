import type { CallLimit, Decision, LearnedLimit } from '@fleetlimit/core'
import { expect } from 'chai'
import { resolvePolicy } from '../../../packages/core/src/limiter/policy.js'
import { createAdapter } from '../../../packages/core/src/outbound/adapt.js'

const decision = (limit: number, remaining: number): Decision => ({
  allowed: true,
  limit,
  remaining,
  retryAfterMs: 0,
  resetMs: 1_000,
  source: 'store',
  policy: 'up',
})

/** A limiter that learns as told: `learned` answers each read in turn. */
function fakeLimiter(learned: (LearnedLimit | undefined)[]) {
  const refunded: Decision[] = []
  const released: Decision[] = []
  return {
    refunded,
    released,
    limiter: {
      release: async (d: Decision) => {
        released.push(d)
        return { slots: 1, outcome: 'released' as const }
      },
      policies: [resolvePolicy({ limit: 60, window: '1s', name: 'up' })],
      learned: async () => learned.shift(),
      learn: async () => undefined,
      refund: async (d: Decision) => {
        refunded.push(d)
        return { units: 1, outcome: 'refunded' as const }
      },
    },
  }
}

describe('the adapter of limitedFetch', () => {
  it('refunds and asks again an admission that the limit lowered while it waited would not have made', async () => {
    const { limiter, refunded, released } = fakeLimiter([
      { limit: 20, source: 'aimd' },
      { limit: 14, source: 'aimd' },
      { limit: 14, source: 'aimd' },
      { limit: 14, source: 'aimd' },
    ])
    const asked: CallLimit[] = []
    const answers = [decision(20, 3), decision(14, 2)]
    const admitted = await createAdapter(limiter, 'aimd', 'k', undefined).admit(async (limit) => {
      if (limit !== undefined) asked.push(limit)
      return answers.shift() as Decision
    })
    // 17 units were in the window once the first was admitted under 20: over the 14 learned meanwhile.
    expect(asked).to.deep.equal([20, 14])
    expect(refunded).to.deep.equal([decision(20, 3)])
    // Its in-flight slots too (a limiter with a concurrency policy): else each would be held until it expires.
    expect(released).to.deep.equal([decision(20, 3)])
    expect(admitted).to.deep.equal(decision(14, 2))
  })

  it('keeps an admission that fits the lowered limit, and never refunds without a lower limit', async () => {
    const { limiter, refunded } = fakeLimiter([
      { limit: 20, source: 'aimd' },
      { limit: 14, source: 'aimd' },
    ])
    const admitted = await createAdapter(limiter, 'aimd', 'k', undefined).admit(async () => decision(20, 10))
    expect([admitted.remaining, refunded]).to.deep.equal([10, []])
    const none = fakeLimiter([undefined, undefined])
    await createAdapter(none.limiter, 'headers', 'k', undefined).admit(async () => decision(60, 0))
    expect(none.refunded).to.deep.equal([])
  })
})
