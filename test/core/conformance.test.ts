import { createRateLimiter, type Store, type WindowRequest } from '@fleetlimit/core'
import { expect } from 'chai'
import { closeStoreClients, sleep, storeKinds } from '../support/stores.js'

const request = (key: string, limit: number, windowMs: number, cost = 1): WindowRequest => ({
  key,
  limit,
  windowMs,
  cost,
})

for (const kind of storeKinds) {
  describe(`store conformance: ${kind.name}`, () => {
    let store: Store
    beforeEach(() => {
      store = kind.make()
    })
    after(closeStoreClients)

    it('admits up to the limit, counting remaining down, then denies with the wait for the oldest unit', async () => {
      const first = await store.consume(request('k', 3, 10_000))
      expect(first).to.include({ allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 10_000 })
      expect((await store.consume(request('k', 3, 10_000))).remaining).to.equal(1)
      expect((await store.consume(request('k', 3, 10_000))).remaining).to.equal(0)
      const denied = await store.consume(request('k', 3, 10_000))
      expect(denied).to.include({ allowed: false, remaining: 0 })
      // Exact to the store's own clock (within the rounding of its microsecond scores).
      expect(denied.retryAfterMs).to.be.closeTo(Math.ceil(first.now + 10_000 - denied.now), 1)
      expect(denied.resetMs).to.be.within(denied.retryAfterMs, 10_000)
    })

    it('admits again exactly when the promised wait has passed, and not before', async function () {
      this.timeout(10_000)
      await store.consume(request('k', 1, 250))
      const denied = await store.consume(request('k', 1, 250))
      const fitsAt = denied.now + denied.retryAfterMs
      await sleep(denied.retryAfterMs - 5)
      const early = await store.consume(request('k', 1, 250))
      if (early.now < fitsAt - 1) {
        expect(early.allowed, 'denied before the promised time').to.equal(false)
        expect(early.now + early.retryAfterMs).to.be.closeTo(fitsAt, 1)
        await sleep(early.retryAfterMs)
        expect((await store.consume(request('k', 1, 250))).allowed, 'admitted on time').to.equal(true)
      } else {
        expect(early.allowed).to.equal(true)
      }
    })

    it('fits a cost when enough is left, and denies a larger one without recording it', async () => {
      expect(await store.consume(request('k', 5, 10_000, 4))).to.include({ allowed: true, remaining: 1 })
      const denied = await store.consume(request('k', 5, 10_000, 2))
      expect(denied).to.include({ allowed: false, remaining: 1 })
      expect(await store.consume(request('k', 5, 10_000, 1))).to.include({ allowed: true, remaining: 0 })
    })

    it('peeks without consuming', async () => {
      expect(await store.peek(request('k', 2, 10_000))).to.include({ allowed: true, remaining: 2, resetMs: 0 })
      await store.consume(request('k', 2, 10_000))
      const peeked = await store.peek(request('k', 2, 10_000))
      expect(peeked).to.include({ allowed: true, remaining: 1 })
      expect(peeked.resetMs).to.be.within(9_000, 10_000)
      expect((await store.consume(request('k', 2, 10_000))).remaining).to.equal(0)
      expect((await store.peek(request('k', 2, 10_000))).allowed).to.equal(false)
    })

    it('reset forgets a key and only that key', async () => {
      await store.consume(request('a', 1, 10_000))
      await store.consume(request('b', 1, 10_000))
      await store.reset('a')
      expect((await store.consume(request('a', 1, 10_000))).allowed).to.equal(true)
      expect((await store.consume(request('b', 1, 10_000))).allowed).to.equal(false)
    })

    it('admits exactly the limit out of many concurrent calls', async () => {
      const results = await Promise.all(Array.from({ length: 200 }, () => store.consume(request('k', 50, 10_000))))
      expect(results.filter((r) => r.allowed)).to.have.length(50)
    })

    it('keeps tenants, routes and policies of one limiter apart', async () => {
      const a = createRateLimiter({ store, limit: 1, window: '10s', name: 'a' })
      const b = createRateLimiter({ store, limit: 1, window: '10s', name: 'b' })
      expect((await a.consume('t1')).allowed).to.equal(true)
      expect((await a.consume('t1')).allowed).to.equal(false)
      expect((await a.consume('t2')).allowed).to.equal(true)
      expect((await a.consume({ tenant: 't1', route: 'GET /x' })).allowed).to.equal(true)
      expect((await b.consume('t1')).allowed).to.equal(true)
    })

    it('reports limiter decisions with the policy, the source and the stats', async () => {
      const limiter = createRateLimiter({ store, limit: 2, window: '10s', name: 'api' })
      expect(await limiter.consume('t')).to.deep.equal({
        allowed: true,
        limit: 2,
        remaining: 1,
        retryAfterMs: 0,
        resetMs: 10_000,
        source: 'store',
        policy: 'api',
      })
      await limiter.consume('t', { cost: 1 })
      const denied = await limiter.consume('t')
      expect(denied).to.include({ allowed: false, remaining: 0, source: 'store' })
      expect(await limiter.peek('t')).to.include({ allowed: false, remaining: 0 })
      await limiter.reset('t')
      expect(await limiter.peek('t')).to.include({ allowed: true, remaining: 2 })
      expect(limiter.stats()).to.include({ decisions: 3, allowed: 2, denied: 1, storeCalls: 3, storeErrors: 0 })
    })
  })
}
