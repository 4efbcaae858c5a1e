import { createRateLimiter, isFleetlimitError, type Store } from '@fleetlimit/core'
import { expect } from 'chai'

/** Per-call limits (tenants on plans) through the limiter: run against the memory store, Redis and a Cluster. */
export function describePlans(name: string, make: () => Store) {
  describe(`per-call limits (plans): ${name}`, () => {
    it('each tenant gets its own limit in one policy: decisions, remaining and the limit reported are the call’s', async () => {
      const limiter = createRateLimiter({ store: make(), limit: 1_000, window: '1m', name: 'api' })
      const free = []
      const pro = []
      for (let i = 0; i < 6; i++) {
        free.push(await limiter.consume({ tenant: 'free-co' }, { limit: 3 }))
        pro.push(await limiter.consume({ tenant: 'pro-co' }, { limit: 5 }))
      }
      expect(free.map((d) => d.allowed)).to.deep.equal([true, true, true, false, false, false])
      expect(pro.map((d) => d.allowed)).to.deep.equal([true, true, true, true, true, false])
      expect(free.map((d) => d.remaining)).to.deep.equal([2, 1, 0, 0, 0, 0])
      expect(free.every((d) => d.limit === 3 && d.policy === 'api')).to.equal(true)
      expect(pro[5]).to.include({ allowed: false, limit: 5, remaining: 0 })
      // Until pro-co's first unit leaves the 1 min window: the window less the few ms since it was admitted.
      expect(pro[5]?.retryAfterMs).to.be.within(59_000, 60_000)
      // A call without a limit uses the policy's, on the same key.
      expect(await limiter.consume({ tenant: 'free-co' })).to.include({ allowed: true, limit: 1_000, remaining: 996 })
      expect(await limiter.peek({ tenant: 'pro-co' }, { limit: 7 })).to.include({ allowed: true, remaining: 2 })
    })

    it('an upgrade mid-window admits the difference at once; a downgrade denies until the window drains to it', async () => {
      const limiter = createRateLimiter({ store: make(), limit: 100, window: '1m', local: false })
      for (let i = 0; i < 3; i++) expect((await limiter.consume('up', { limit: 3 })).allowed).to.equal(true)
      expect((await limiter.consume('up', { limit: 3 })).allowed).to.equal(false)
      const upgraded = []
      for (let i = 0; i < 3; i++) upgraded.push(await limiter.consume('up', { limit: 5 }))
      expect(upgraded.map((d) => [d.allowed, d.remaining])).to.deep.equal([
        [true, 1],
        [true, 0],
        [false, 0],
      ])

      for (let i = 0; i < 5; i++) expect((await limiter.consume('down', { limit: 5 })).allowed).to.equal(true)
      const downgraded = await limiter.consume('down', { limit: 2 })
      expect(downgraded).to.include({ allowed: false, limit: 2, remaining: 0 })
      // Four of the five units must leave before one more fits under 2: the fourth oldest's exit.
      const back = await limiter.consume('down', { limit: 5 })
      expect(back.allowed, 'the tenant’s admissions were kept').to.equal(false)
      expect(downgraded.retryAfterMs).to.be.at.least(back.retryAfterMs)
    })

    it('with several policies, a map from policy name to limit; a policy left out keeps its own', async () => {
      const limiter = createRateLimiter({
        store: make(),
        policies: [
          { name: 'burst', limit: 100, window: '1s' },
          { name: 'daily', limit: 1_000, window: '1d', scope: 'tenant' },
        ],
      })
      const first = await limiter.consume({ tenant: 't', route: 'GET /a' }, { limit: { daily: 2 } })
      expect(first.policies?.map((d) => [d.policy, d.limit, d.remaining])).to.deep.equal([
        ['burst', 100, 99],
        ['daily', 2, 1],
      ])
      await limiter.consume({ tenant: 't', route: 'GET /b' }, { limit: { daily: 2 } })
      const denied = await limiter.consume({ tenant: 't', route: 'GET /a' }, { limit: { daily: 2, burst: 50 } })
      expect(denied).to.include({ allowed: false, policy: 'daily', limit: 2 })
    })

    it('10,000 concurrent calls under a tenant’s limit admit exactly that many', async function () {
      this.timeout(60_000)
      // A deadline far beyond the burst: this asserts what is admitted, not how fast (a busy CI machine).
      const limiter = createRateLimiter({
        store: make(),
        limit: 1_000_000,
        window: '1m',
        local: false,
        timeoutMs: '10s',
      })
      const decisions = await Promise.all(
        Array.from({ length: 10_000 }, () => limiter.consume({ tenant: 'burst' }, { limit: 250 })),
      )
      expect(decisions.filter((d) => d.allowed)).to.have.length(250)
      expect(decisions.every((d) => d.limit === 250)).to.equal(true)
    })

    it('acquire waits under the call’s limit', async () => {
      const limiter = createRateLimiter({ store: make(), limit: 1_000, window: '200ms' })
      await limiter.consume('q', { limit: 1 })
      const admitted = await limiter.acquire('q', { limit: 1, maxWaitMs: 5_000 })
      expect(admitted).to.include({ allowed: true, limit: 1, remaining: 0 })
    })

    it('the local tier never answers one plan from another’s denial or lease', async () => {
      const cached = createRateLimiter({ store: make(), limit: 100, window: '1m' })
      await cached.consume('t', { limit: 1 })
      expect(await cached.consume('t', { limit: 1 })).to.include({ allowed: false, source: 'store' })
      expect(await cached.consume('t', { limit: 1 })).to.include({ allowed: false, source: 'local' })
      expect(await cached.consume('t', { limit: 2 }), 'an upgrade asks the store').to.include({
        allowed: true,
        source: 'store',
        limit: 2,
      })

      const leased = createRateLimiter({ store: make(), limit: 100, window: '1m', local: { lease: 10 } })
      expect(await leased.consume('t')).to.include({ allowed: true, source: 'store' })
      expect(await leased.consume('t')).to.include({ allowed: true, source: 'local', limit: 100 })
      // The lease's 10 units are in the window: a plan of 5 is full, whatever the lease holds unused.
      expect(await leased.consume('t', { limit: 5 })).to.include({ allowed: false, source: 'store', limit: 5 })
    })

    it('rejects a bad limit with a coded error that says what to pass', async () => {
      const one = createRateLimiter({ store: make(), limit: 10, window: '1m' })
      const several = createRateLimiter({
        store: make(),
        policies: [
          { name: 'a', limit: 10, window: '1m' },
          { name: 'b', limit: 10, window: '1h' },
        ],
      })
      const cases: [Promise<unknown>, RegExp][] = [
        [one.consume('k', { limit: 0 }), /limit.*whole number from 1/],
        [one.consume('k', { limit: 2.5 }), /limit.*whole number/],
        [one.consume('k', { limit: '5' as unknown as number }), /limit.*whole number/],
        [one.consume('k', { limit: 3, cost: 4 }), /cost.*from 1 to 3/],
        [several.consume('k', { limit: 5 }), /map from policy name \(a, b\)/],
        [several.consume('k', { limit: { c: 5 } }), /limit\.c.*accepted options are a, b/],
        [several.consume('k', { limit: { a: -1 } }), /limit\.a/],
        [one.acquire('k', { limit: Number.NaN }), /limit/],
      ]
      for (const [call, message] of cases) {
        const error = await call.then(
          () => undefined,
          (e: unknown) => e,
        )
        expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION'), String(error)).to.equal(true)
        expect((error as Error).message).to.match(message)
      }
    })
  })
}
