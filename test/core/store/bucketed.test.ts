import { createRateLimiter, memoryStore, type Store } from '@fleetlimit/core'
import { expectAdmittedExactlyAt } from '@fleetlimit/test-kit/exact-wait'
import { expect } from 'chai'
import fc from 'fast-check'
import type { WindowRequest, WindowResult } from '../../../packages/core/src/store/store.js'
import { storeKinds, useStoreClients } from '../../support/stores.js'

const request = (key: string, limit: number, windowMs: number, cost = 1, buckets = 10): WindowRequest => ({
  key,
  limit,
  windowMs,
  cost,
  buckets,
})

for (const kind of storeKinds) {
  describe(`bucketed algorithm: ${kind.name}`, () => {
    let store: Store
    beforeEach(() => {
      store = kind.make()
    })
    useStoreClients()
    const consume = async (r: WindowRequest) => (await store.consume([r]))[0] as WindowResult

    it('admits up to the limit, then denies and records nothing', async () => {
      const started = performance.now()
      for (let i = 0; i < 3; i++) expect((await consume(request('k', 3, 10_000))).remaining).to.equal(2 - i)
      const denied = await consume(request('k', 3, 10_000))
      expect(denied).to.include({ allowed: false, remaining: 0 })
      // Until the first admission's bucket leaves the window: less the time these calls took on a busy machine.
      expect(denied.retryAfterMs).to.be.within(10_000 - Math.ceil(performance.now() - started), 11_000)
      expect((await store.peek([request('k', 3, 10_000)]))[0]).to.include({ allowed: false, remaining: 0 })
    })

    it('admits again exactly when the promised wait has passed', async function () {
      this.timeout(10_000)
      await consume(request('k', 1, 300))
      const denied = await consume(request('k', 1, 300))
      await expectAdmittedExactlyAt(denied.now + denied.retryAfterMs, denied.now, () => consume(request('k', 1, 300)))
    })

    it('admits exactly the limit out of many concurrent calls, and resets', async () => {
      const results = await Promise.all(Array.from({ length: 200 }, () => consume(request('k', 50, 10_000))))
      expect(results.filter((r) => r.allowed)).to.have.length(50)
      await store.reset('k')
      expect((await consume(request('k', 50, 10_000))).allowed).to.equal(true)
    })

    it('is a policy option of the limiter', async () => {
      const limiter = createRateLimiter({ store, limit: 2, window: '10s', algorithm: 'bucketed', buckets: 20 })
      expect(limiter.policy).to.include({ algorithm: 'bucketed', buckets: 20 })
      await limiter.consume('t')
      await limiter.consume('t')
      expect(await limiter.consume('t')).to.include({ allowed: false, source: 'store' })
    })
  })
}

describe('bucketed model (fast-check, injected clock)', () => {
  it('never holds more than the limit in any window, and every denial’s wait is exact for the model', async () => {
    const call = fc.record({ advance: fc.integer({ min: 0, max: 150 }), cost: fc.integer({ min: 1, max: 6 }) })
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 400 }),
        fc.integer({ min: 1, max: 12 }),
        fc.array(call, { maxLength: 60 }),
        async (limit, windowMs, buckets, calls) => {
          let now = 1_000_000
          const store = memoryStore({ clock: () => now })
          const width = Math.max(1, Math.floor((windowMs * 1000) / buckets))
          const admissions: { at: number; cost: number }[] = []
          // The model: every bucket overlapping (t - window, t] counts in full.
          const usedAt = (t: number) => {
            const oldest = Math.floor((t * 1000 - windowMs * 1000) / width)
            return admissions.filter((a) => Math.floor((a.at * 1000) / width) >= oldest).reduce((s, a) => s + a.cost, 0)
          }
          for (const { advance, cost: raw } of calls) {
            now += advance
            const cost = Math.min(raw, limit)
            const [result] = (await store.consume([{ key: 'k', limit, windowMs, cost, buckets }])) as [WindowResult]
            const used = usedAt(now)
            expect(result.allowed).to.equal(used + cost <= limit)
            if (result.allowed) {
              admissions.push({ at: now, cost })
              continue
            }
            let wait = 1
            while (usedAt(now + wait) + cost > limit) wait++
            expect(result.retryAfterMs).to.equal(wait)
          }
          const times = admissions.flatMap((a) => Array.from({ length: a.cost }, () => a.at))
          for (const t of times) expect(times.filter((x) => x > t - windowMs && x <= t).length).to.be.at.most(limit)
        },
      ),
      { numRuns: 300 },
    )
  })
})
