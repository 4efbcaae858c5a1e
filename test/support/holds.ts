import { createRateLimiter, type Decision, type Store } from '@fleetlimit/core'
import { sleep } from '@fleetlimit/test-kit/sleep'
import { expect } from 'chai'

// Listeners a store holds weakly, kept alive here while a test waits on them.
const waiting = new Set<() => void>()

/**
 * Makes the change `change` announces until `store` has heard it: a Redis store's subscription starts on its
 * own, and a store answer to a question sent before the change arrives is rightly not cached.
 */
async function heard(store: Store, change: () => Promise<unknown>): Promise<void> {
  if (!store.onKeyChange) {
    await change()
    return
  }
  let resolve = () => {}
  const listener = () => resolve()
  waiting.add(listener)
  store.onKeyChange(listener)
  try {
    for (let tries = 0; tries < 200; tries++) {
      const message = new Promise<true>((done) => (resolve = () => done(true)))
      await change()
      if (await Promise.race([message, sleep(50).then(() => false)])) return
    }
    throw new Error('the store never heard its own change')
  } finally {
    waiting.delete(listener)
  }
}

/**
 * Blocks, pauses, shadow policies and refunds through the limiter: run against the memory store, Redis and a
 * Cluster. Times here are the store's own; exact waits are checked with an injected clock elsewhere. A store
 * whose client has no subscriber (a node-redis cluster) never hears a change: say so with `hearsChanges`.
 */
export function describeHoldsAndRefunds(name: string, make: () => Store, { hearsChanges = true } = {}) {
  describe(`blocks, pauses, shadow mode and refunds: ${name}`, () => {
    for (const algorithm of ['sliding-log', 'bucketed'] as const) {
      it(`blockFor (${algorithm}): once denied, denied for the block, with its wait, for every process; a reset ends it`, async () => {
        const store = make()
        const policy = { limit: 2, window: '1s', blockFor: '20s', algorithm, name: `block-${algorithm}` } as const
        const a = createRateLimiter({ store, ...policy, local: false })
        const b = createRateLimiter({ store, ...policy })
        expect((await a.consume('t')).allowed).to.equal(true)
        expect((await a.consume('t')).allowed).to.equal(true)
        const denied = await a.consume('t')
        expect(denied).to.include({ allowed: false, remaining: 0 })
        expect(denied.retryAfterMs, 'the block, not the window').to.be.within(19_000, 20_000)
        const other = await b.consume('t')
        expect(other.allowed).to.equal(false)
        expect(other.retryAfterMs).to.be.within(18_000, 20_000)
        expect(await b.consume('t'), 'the deny cache holds the block').to.include({ allowed: false, source: 'local' })
        expect((await a.peek('t')).allowed, 'a peek of a blocked key').to.equal(false)
        expect((await a.consume('u')).allowed, 'another tenant').to.equal(true)
        await a.reset('t')
        expect((await a.consume('t')).allowed).to.equal(true)
      })
    }

    it('pause(key, ms): every process denies the key with the pause left; a shorter pause never shortens it', async () => {
      const store = make()
      const a = createRateLimiter({ store, limit: 100, window: '1m', name: 'upstream', local: false })
      const b = createRateLimiter({ store, limit: 100, window: '1m', name: 'upstream', local: { lease: 'auto' } })
      expect((await a.consume('api')).allowed).to.equal(true)
      await b.pause('api', '30s')
      await a.pause('api', 10)
      for (const limiter of [a, b]) {
        const d = await limiter.consume('api')
        expect(d).to.include({ allowed: false, remaining: 0 })
        expect(d.retryAfterMs).to.be.within(29_000, 30_000)
      }
      // A key never used before is paused as well.
      await a.pause('fresh', '5s')
      expect((await b.consume('fresh')).retryAfterMs).to.be.within(4_000, 5_000)
      expect((await a.consume('other')).allowed).to.equal(true)
      const bad = await a.pause('api', 0).then(
        () => undefined,
        (error: unknown) => error,
      )
      expect(String(bad)).to.match(/pause\(key, ms\)/)
    })

    for (const algorithm of ['sliding-log', 'bucketed'] as const) {
      it(`a held key (${algorithm}) answers a call with 0 remaining while it denies every call: paused, or blocked with room`, async () => {
        const store = make()
        const policy = { limit: 5, window: '1m', algorithm, name: `held-${algorithm}` } as const
        const a = createRateLimiter({ store, ...policy, local: false })
        const cached = createRateLimiter({ store, ...policy })
        expect(await a.consume('k')).to.include({ allowed: true, remaining: 4 })
        if (hearsChanges) await heard(store, () => a.pause('k', '10m'))
        else await a.pause('k', '10m')
        const denied = await a.consume('k')
        expect(denied).to.include({ allowed: false, remaining: 0 })
        expect(denied.retryAfterMs).to.be.within(599_000, 600_000)
        // A peek decides nothing: it reports the window's room, which `fleetlimit peek` and `keys` read.
        expect(await a.peek('k')).to.include({ allowed: false, remaining: 4 })
        expect(await cached.consume('k')).to.include({ allowed: false, remaining: 0, source: 'store' })
        expect(await cached.consume('k')).to.include({ allowed: false, remaining: 0, source: 'local' })
        if (algorithm === 'sliding-log') {
          // Several policies in one call, and leases: sliding logs only.
          const both = createRateLimiter({
            store,
            policies: [policy, { name: `other-${algorithm}`, limit: 10, window: '1m' }],
            local: false,
          })
          const two = await both.consume('k')
          expect(two).to.include({ allowed: false, remaining: 0, policy: policy.name })
          expect(two.policies?.map((d) => [d.policy, d.allowed, d.remaining])).to.deep.equal([
            [policy.name, false, 0],
            [`other-${algorithm}`, true, 10],
          ])
          const leasing = createRateLimiter({ store, ...policy, local: { lease: 2 } })
          expect(await leasing.consume('k'), 'a lease asked of a paused key').to.include({
            allowed: false,
            remaining: 0,
          })
        }

        // A block started by a cost that does not fit leaves room for a smaller one, which the block denies too.
        const blocking = createRateLimiter({
          store,
          ...policy,
          name: `block-${algorithm}`,
          blockFor: '10m',
          local: false,
        })
        expect(await blocking.consume('v', { cost: 3 })).to.include({ allowed: true, remaining: 2 })
        expect(await blocking.consume('v', { cost: 3 })).to.include({ allowed: false, remaining: 0 })
        expect(await blocking.consume('v')).to.include({ allowed: false, remaining: 0 })
      })
    }

    it('pause: acquire waits the pause out, then is admitted', async () => {
      const limiter = createRateLimiter({ store: make(), limit: 5, window: '1m' })
      await limiter.pause('k', 150)
      const denied = await limiter.consume('k')
      expect(denied.allowed).to.equal(false)
      const admitted = await limiter.acquire('k', { maxWaitMs: 5_000 })
      expect(admitted).to.include({ allowed: true, remaining: 4 })
    })

    it('10,000 concurrent calls on a paused key: all denied, none recorded', async function () {
      this.timeout(60_000)
      // A deadline far beyond the burst: this asserts what is decided, not how fast (a busy CI machine).
      const limiter = createRateLimiter({
        store: make(),
        limit: 1_000_000,
        window: '1m',
        local: false,
        timeoutMs: '10s',
      })
      await limiter.pause('hot', '1m')
      const decisions = await Promise.all(Array.from({ length: 10_000 }, () => limiter.consume('hot')))
      expect(decisions.filter((d) => d.allowed)).to.have.length(0)
      await limiter.reset('hot')
      expect(await limiter.consume('hot')).to.include({ allowed: true, remaining: 999_999 })
    })

    it('a shadow policy lets every call through and reports what it would have denied', async () => {
      const limiter = createRateLimiter({ store: make(), limit: 2, window: '1m', name: 'trial', shadow: true })
      const seen: Decision[] = []
      limiter.on('decision', (d) => seen.push(d))
      const decisions = []
      for (let i = 0; i < 5; i++) decisions.push(await limiter.consume('t'))
      expect(decisions.map((d) => d.allowed)).to.deep.equal([true, true, true, true, true])
      expect(decisions.map((d) => d.shadowDenied === true)).to.deep.equal([false, false, true, true, true])
      expect(decisions.map((d) => d.remaining)).to.deep.equal([1, 0, 0, 0, 0])
      expect(decisions.every((d) => d.retryAfterMs === 0)).to.equal(true)
      expect(seen.filter((d) => d.shadowDenied)).to.have.length(3)
      expect(limiter.stats()).to.include({ decisions: 5, allowed: 5, denied: 0, shadowDenied: 3 })
    })

    it('a shadow policy beside an enforced one: the enforced one decides and counts every call let through', async () => {
      const limiter = createRateLimiter({
        store: make(),
        policies: [
          { name: 'api', limit: 4, window: '1m' },
          { name: 'next', limit: 2, window: '1m', shadow: true },
        ],
      })
      const decisions = []
      for (let i = 0; i < 5; i++) decisions.push(await limiter.consume('t'))
      expect(decisions.map((d) => d.allowed)).to.deep.equal([true, true, true, true, false])
      expect(decisions.map((d) => d.shadowDenied === true)).to.deep.equal([false, false, true, true, false])
      expect(decisions[3]?.policies?.map((d) => [d.policy, d.allowed, d.remaining, d.shadow === true])).to.deep.equal([
        ['api', true, 0, false],
        ['next', false, 0, true],
      ])
      expect(decisions[4]).to.include({ allowed: false, policy: 'api' })
    })

    it('refund(decision) removes exactly its units, once; a denial or an unknown decision says so', async () => {
      const limiter = createRateLimiter({ store: make(), limit: 2, window: '1m', local: false })
      const first = await limiter.consume('t')
      await limiter.consume('t')
      const denied = await limiter.consume('t')
      expect(await limiter.refund(first)).to.deep.equal({ units: 1, outcome: 'refunded' })
      expect(await limiter.refund(first)).to.deep.equal({ units: 0, outcome: 'already-refunded' })
      expect(await limiter.refund(denied)).to.deep.equal({ units: 0, outcome: 'denied' })
      expect(await limiter.refund({ ...first })).to.deep.equal({ units: 0, outcome: 'not-refundable' })
      expect(await limiter.consume('t')).to.include({ allowed: true, remaining: 0 })
      expect(limiter.stats().refundedUnits).to.equal(1)
    })

    it('refund(decision) reads only the decision’s own receipt: a clone or a copy refunds nothing, the decision once', async () => {
      const limiter = createRateLimiter({ store: make(), limit: 3, window: '1m', local: false })
      // Admitted together: one entry holds all three units, so a second refund of one would find units to remove.
      const [d] = await Promise.all([limiter.consume('t'), limiter.consume('t'), limiter.consume('t')])
      const decision = d as Decision
      const clones = Array.from({ length: 5 }, () => Object.create(decision) as Decision)
      for (const clone of clones) {
        expect(await limiter.refund(clone)).to.deep.equal({ units: 0, outcome: 'not-refundable' })
      }
      // The receipt is no property: no key or symbol of the decision carries it onto a copy.
      expect(Reflect.ownKeys(decision).filter((key) => typeof key !== 'string')).to.deep.equal([])
      expect(await limiter.refund(Object.assign({}, decision))).to.deep.equal({ units: 0, outcome: 'not-refundable' })
      expect(await limiter.refund(decision)).to.deep.equal({ units: 1, outcome: 'refunded' })
      expect(await limiter.refund(decision)).to.deep.equal({ units: 0, outcome: 'already-refunded' })
      expect(await limiter.peek('t')).to.include({ remaining: 1 })
    })

    it('refund of several policies removes the units from each; of a bucketed window, from its bucket', async () => {
      const multi = createRateLimiter({
        store: make(),
        policies: [
          { name: 'route', limit: 3, window: '1m' },
          { name: 'global', limit: 5, window: '1h', scope: 'tenant' },
        ],
      })
      const d = await multi.consume({ tenant: 't', route: 'GET /a' }, { cost: 3 })
      expect(await multi.refund(d)).to.deep.equal({ units: 3, outcome: 'refunded' })
      const again = await multi.consume({ tenant: 't', route: 'GET /a' }, { cost: 3 })
      expect(again.policies?.map((p) => p.remaining)).to.deep.equal([0, 2])

      const bucketed = createRateLimiter({ store: make(), limit: 2, window: '1m', algorithm: 'bucketed' })
      const b = await bucketed.consume('t', { cost: 2 })
      expect(await bucketed.refund(b)).to.deep.equal({ units: 2, outcome: 'refunded' })
      expect(await bucketed.consume('t', { cost: 2 })).to.include({ allowed: true, remaining: 0 })
    })

    it('refund of leased decisions, the lease call’s and a local one: the fleet gets the units back', async () => {
      const store = make()
      const leasing = createRateLimiter({ store, limit: 5, window: '1m', local: { lease: 5 } })
      const other = createRateLimiter({ store, limit: 5, window: '1m', local: false })
      const byLease = await leasing.consume('t')
      const local = await leasing.consume('t')
      expect([byLease.source, local.source]).to.deep.equal(['store', 'local'])
      expect((await other.consume('t')).allowed, 'the lease holds all five').to.equal(false)
      expect(await leasing.refund(local)).to.deep.equal({ units: 1, outcome: 'refunded' })
      expect(await leasing.refund(byLease)).to.deep.equal({ units: 1, outcome: 'refunded' })
      expect((await other.consume('t')).allowed).to.equal(true)
      expect((await other.consume('t')).allowed).to.equal(true)
      expect((await other.consume('t')).allowed).to.equal(false)
    })

    it('10,000 concurrent refunds of one decision refund it once', async function () {
      this.timeout(60_000)
      const limiter = createRateLimiter({ store: make(), limit: 10, window: '1m', timeoutMs: '10s' })
      const d = await limiter.consume('t', { cost: 4 })
      const results = await Promise.all(Array.from({ length: 10_000 }, () => limiter.refund(d)))
      expect(results.filter((r) => r.outcome === 'refunded')).to.deep.equal([{ units: 4, outcome: 'refunded' }])
      expect(await limiter.peek('t')).to.include({ remaining: 10 })
    })
  })
}
