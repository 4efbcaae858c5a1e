import { createRateLimiter, type Store } from '@fleetlimit/core'
import { expectAdmittedExactlyAt } from '@fleetlimit/test-kit/exact-wait'
import { expect } from 'chai'
import type { WindowRequest, WindowResult } from '../../packages/core/src/store/store.js'

const request = (key: string, limit: number, windowMs: number, cost = 1): WindowRequest => ({
  key,
  limit,
  windowMs,
  cost,
})

/** The behaviour every store must have: run against the memory store, Redis, and a Redis Cluster. */
export function describeStoreConformance(name: string, make: () => Store, done?: () => Promise<void>) {
  describe(`store conformance: ${name}`, () => {
    let store: Store
    beforeEach(() => {
      store = make()
    })
    const consume = async (r: WindowRequest) => (await store.consume([r]))[0] as WindowResult
    const peek = async (r: WindowRequest) => (await store.peek([r]))[0] as WindowResult
    if (done) after(done)

    it('admits up to the limit, counting remaining down, then denies with the wait for the oldest unit', async () => {
      const first = await consume(request('k', 3, 10_000))
      expect(first).to.include({ allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 10_000 })
      expect((await consume(request('k', 3, 10_000))).remaining).to.equal(1)
      expect((await consume(request('k', 3, 10_000))).remaining).to.equal(0)
      const denied = await consume(request('k', 3, 10_000))
      expect(denied).to.include({ allowed: false, remaining: 0 })
      // Exact to the store's own clock (within the rounding of its microsecond scores).
      expect(denied.retryAfterMs).to.be.closeTo(Math.ceil(first.now + 10_000 - denied.now), 1)
      expect(denied.resetMs).to.be.within(denied.retryAfterMs, 10_000)
    })

    it('admits again exactly when the promised wait has passed, and not before', async function () {
      this.timeout(10_000)
      await consume(request('k', 1, 250))
      const denied = await consume(request('k', 1, 250))
      expect(denied.allowed).to.equal(false)
      await expectAdmittedExactlyAt(denied.now + denied.retryAfterMs, denied.now, () => consume(request('k', 1, 250)))
    })

    it('fits a cost when enough is left, and denies a larger one without recording it', async () => {
      expect(await consume(request('k', 5, 10_000, 4))).to.include({ allowed: true, remaining: 1 })
      const denied = await consume(request('k', 5, 10_000, 2))
      expect(denied).to.include({ allowed: false, remaining: 1 })
      expect(await consume(request('k', 5, 10_000, 1))).to.include({ allowed: true, remaining: 0 })
    })

    it('peeks without consuming', async () => {
      expect(await peek(request('k', 2, 10_000))).to.include({ allowed: true, remaining: 2, resetMs: 0 })
      await consume(request('k', 2, 10_000))
      const peeked = await peek(request('k', 2, 10_000))
      expect(peeked).to.include({ allowed: true, remaining: 1 })
      expect(peeked.resetMs).to.be.within(9_000, 10_000)
      expect((await consume(request('k', 2, 10_000))).remaining).to.equal(0)
      expect((await peek(request('k', 2, 10_000))).allowed).to.equal(false)
    })

    it('reset forgets a key and only that key', async () => {
      await consume(request('a', 1, 10_000))
      await consume(request('b', 1, 10_000))
      await store.reset('a')
      expect((await consume(request('a', 1, 10_000))).allowed).to.equal(true)
      expect((await consume(request('b', 1, 10_000))).allowed).to.equal(false)
    })

    it('admits exactly the limit out of many concurrent calls', async () => {
      const results = await Promise.all(Array.from({ length: 200 }, () => consume(request('k', 50, 10_000))))
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
      expect(limiter.stats()).to.include({ decisions: 3, allowed: 2, denied: 1, storeCalls: 6, storeErrors: 0 })
    })

    it('decides several windows at once: all or nothing, each with its own answer', async () => {
      // One tenant's windows share a hash tag, as the limiter's keys do, so this also runs on a cluster.
      const a = request('{t}:a', 3, 10_000)
      const b = request('{t}:b', 1, 5_000)
      const [ra, rb] = await store.consume([a, b])
      expect(ra).to.include({ allowed: true, remaining: 2 })
      expect(rb).to.include({ allowed: true, remaining: 0 })
      const [da, db] = await store.consume([a, b])
      expect(da, 'a alone had room').to.include({ allowed: true, remaining: 2, retryAfterMs: 0 })
      expect(db).to.include({ allowed: false, remaining: 0 })
      expect(db?.retryAfterMs).to.be.within(1, 5_000)
      // The denial recorded nothing in `a`.
      expect(await peek(a)).to.include({ remaining: 2 })
    })

    it('applies a refund at most once per id, in every window; another id refunds what is left', async () => {
      const refund = store.refund?.bind(store)
      if (!refund) throw new Error(`${name} has no refund`)
      const a = request('{t}:a', 5, 10_000, 2)
      const b = request('{t}:b', 5, 60_000, 2)
      const [ra, rb] = await store.consume([a, b])
      const first = await consume(request('k', 5, 10_000, 2))
      const windows = [
        { key: a.key, windowMs: a.windowMs, recorded: ra?.recorded as number },
        { key: b.key, windowMs: b.windowMs, recorded: rb?.recorded as number },
      ]
      expect(await refund(windows, 1, 'id-1')).to.deep.equal({ units: 1, outcome: 'refunded' })
      expect(await refund(windows, 1, 'id-1'), 'sent again').to.deep.equal({ units: 0, outcome: 'already-refunded' })
      expect(await refund(windows, 1, 'id-2'), 'another refund').to.deep.equal({ units: 1, outcome: 'refunded' })
      expect(await refund(windows, 1, 'id-3'), 'none left').to.deep.equal({ units: 0, outcome: 'expired' })
      expect((await store.peek([a, b])).map((r) => r.remaining)).to.deep.equal([5, 5])
      // A key with no hash tag of its own.
      const single = [{ key: 'k', windowMs: 10_000, recorded: first.recorded as number }]
      expect(await refund(single, 2, 'id-4')).to.deep.equal({ units: 2, outcome: 'refunded' })
      expect(await refund(single, 2, 'id-4')).to.deep.equal({ units: 0, outcome: 'already-refunded' })
    })

    it('with several policies, a call denied by one is counted in none, and the longest wait wins', async () => {
      const limiter = createRateLimiter({
        store,
        policies: [
          { name: 'global', limit: 5, window: '10s', scope: 'tenant' },
          { name: 'search', limit: 2, window: '4s' },
        ],
      })
      const key = { tenant: 't', route: 'GET /search' }
      expect((await limiter.consume(key)).allowed).to.equal(true)
      const second = await limiter.consume(key)
      expect(second).to.include({ allowed: true, policy: 'search', remaining: 0 })
      expect(second.policies?.map((d) => [d.policy, d.remaining])).to.deep.equal([
        ['global', 3],
        ['search', 0],
      ])
      const denied = await limiter.consume(key)
      expect(denied).to.include({ allowed: false, policy: 'search' })
      expect(denied.retryAfterMs).to.be.within(3_000, 4_000)
      // The global window still holds two, not three: the denied call was not counted there.
      const other = await limiter.consume({ tenant: 't', route: 'GET /other' })
      expect(other.policies?.[0]).to.include({ policy: 'global', remaining: 2 })
      // Tenant-scoped: the global window is shared by both routes; the route window is not.
      expect(other.policies?.[1]).to.include({ policy: 'search', remaining: 1 })
    })

    it('reports the longer wait when two policies deny', async () => {
      const limiter = createRateLimiter({
        store,
        policies: [
          { name: 'short', limit: 1, window: '2s' },
          { name: 'long', limit: 1, window: '8s' },
        ],
      })
      await limiter.consume('t')
      const denied = await limiter.consume('t')
      expect(denied).to.include({ allowed: false, policy: 'long' })
      expect(denied.retryAfterMs).to.be.within(7_000, 8_000)
    })
  })
}
