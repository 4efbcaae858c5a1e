import { createRateLimiter, type Decision, memoryStore } from '@fleetlimit/core'
import { runFleet } from '@fleetlimit/test-kit/fleet'
import { expect } from 'chai'
import fc from 'fast-check'
import sinon from 'sinon'
import type { DenyEntry } from '../../../packages/core/src/limiter/deny-cache.js'
import { age, agedDenial } from '../../../packages/core/src/limiter/local-tier.js'
import type { Lease } from '../../../packages/core/src/store/store.js'
import { redisUrl } from '../../support/root-hooks.js'

describe('local tier', () => {
  describe('deny cache (fake timers)', () => {
    let clock: sinon.SinonFakeTimers
    beforeEach(() => {
      clock = sinon.useFakeTimers({ now: 1_000_000, toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] })
    })
    afterEach(() => clock.restore())

    it('answers a denied key locally with the store’s numbers counting down, and stops exactly when the store admits', async () => {
      const limiter = createRateLimiter({ store: memoryStore({ clock: () => Date.now() }), limit: 2, window: 1_000 })
      await limiter.consume('k')
      await clock.tickAsync(200)
      await limiter.consume('k')
      const denied = await limiter.consume('k')
      expect(denied).to.include({ allowed: false, source: 'store', retryAfterMs: 800, remaining: 0 })
      const calls = limiter.stats().storeCalls

      await clock.tickAsync(300)
      const cached = await limiter.consume('k')
      expect(cached).to.include({ allowed: false, source: 'local', retryAfterMs: 500, remaining: 0, resetMs: 700 })
      await clock.tickAsync(499)
      expect(await limiter.consume('k')).to.include({ allowed: false, source: 'local', retryAfterMs: 1 })
      expect(limiter.stats()).to.include({ storeCalls: calls, localHits: 2 })

      await clock.tickAsync(1)
      expect(await limiter.consume('k')).to.include({ allowed: true, source: 'store' })
      expect(limiter.stats().storeCalls).to.equal(calls + 1)
    })

    it('answers with the store’s denial aged, field for field and in its order; of several policies, those that denied', async () => {
      const limiter = createRateLimiter({
        store: memoryStore({ clock: () => Date.now() }),
        policies: [
          { name: 'a', limit: 1, window: 1_000 },
          { name: 'b', limit: 5, window: 2_000, scope: 'tenant' },
        ],
      })
      await limiter.consume('k')
      const denied = await limiter.consume('k')
      expect(denied).to.include({ allowed: false, source: 'store' })
      await clock.tickAsync(300)
      const cached = await limiter.consume('k')
      const later = (ms: number) => Math.max(0, ms - 300)
      const aged = (d: Decision) => ({ ...d, retryAfterMs: later(d.retryAfterMs), resetMs: later(d.resetMs) })
      // Policy b admitted: its figures change with calls counted in it since, which this process cannot see.
      expect(denied.policies?.map((d) => [d.policy, d.allowed])).to.deep.equal([
        ['a', false],
        ['b', true],
      ])
      const expected = { ...aged(denied), source: 'local', policies: denied.policies?.slice(0, 1).map(aged) }
      expect(cached).to.deep.equal(expected)
      expect(Reflect.ownKeys(cached)).to.deep.equal(Reflect.ownKeys(expected))
    })

    it('asks the store for a smaller cost than the one denied, and forgets the key on reset', async () => {
      const limiter = createRateLimiter({ store: memoryStore({ clock: () => Date.now() }), limit: 3, window: 1_000 })
      await limiter.consume('k', { cost: 2 })
      expect((await limiter.consume('k', { cost: 2 })).source).to.equal('store')
      expect(await limiter.consume('k', { cost: 1 })).to.include({ allowed: true, source: 'store' })
      expect((await limiter.consume('k', { cost: 2 })).source, 'a cost at least the denied one').to.equal('local')
      await limiter.reset('k')
      expect(await limiter.consume('k', { cost: 2 })).to.include({ allowed: true, source: 'store' })
    })

    it('answers the calls of one millisecond with one answer, counting each, and a later one anew', async () => {
      const limiter = createRateLimiter({ store: memoryStore({ clock: () => Date.now() }), limit: 1, window: 1_000 })
      const events: Decision[] = []
      limiter.on('decision', (d) => events.push(d))
      await limiter.consume('k')
      await limiter.consume('k')
      const [first, second] = [limiter.consume('k'), limiter.consume('k')]
      expect(first, 'one promise').to.equal(second)
      expect(await first).to.include({ allowed: false, source: 'local', retryAfterMs: 1_000 })
      await clock.tickAsync(1)
      const later = await limiter.consume('k')
      expect(later).to.include({ allowed: false, source: 'local', retryAfterMs: 999, resetMs: 999 })
      expect(later).to.not.equal(await first)
      expect(limiter.stats()).to.include({ decisions: 5, denied: 4, localHits: 3, storeCalls: 2 })
      expect(events.length, 'a decision event per call').to.equal(5)
    })

    it('answers 10,000 calls at once on a denied key, each counted, with no store call', async () => {
      const limiter = createRateLimiter({ store: memoryStore({ clock: () => Date.now() }), limit: 1, window: 1_000 })
      await limiter.consume('k')
      await limiter.consume('k')
      const before = limiter.stats()
      const answers = await Promise.all(Array.from({ length: 10_000 }, () => limiter.consume('k')))
      expect(new Set(answers.map((d) => `${d.allowed} ${d.source} ${d.retryAfterMs}`))).to.deep.equal(
        new Set(['false local 1000']),
      )
      const after = limiter.stats()
      expect([after.decisions - before.decisions, after.localHits - before.localHits, after.storeCalls]).to.deep.equal([
        10_000,
        10_000,
        before.storeCalls,
      ])
    })

    it('answers a kept plan’s next call from its denial only while the cache holds it', async () => {
      const store = memoryStore({ clock: () => Date.now() })
      const limiter = createRateLimiter({ store, limit: 1, window: 1_000, local: { denyCache: { size: 1 } } })
      const other = createRateLimiter({ store, limit: 1, window: 1_000 })
      for (const key of ['a', 'a', 'a']) await limiter.consume(key)
      expect(limiter.stats().localHits).to.equal(1)
      // Reset through another limiter: a key change reaches this one's cache, which drops a's denial.
      await other.reset('a')
      // An answer to a question asked at the change's instant is not cached: it may predate the change.
      await clock.tickAsync(1)
      expect(await limiter.consume('a')).to.include({ allowed: true, source: 'store' })
      await limiter.consume('a')
      expect((await limiter.consume('a')).source).to.equal('local')
      // b's denial takes the only place: a's is evicted, and a's plan asks the store again.
      await limiter.consume('b')
      await limiter.consume('b')
      expect((await limiter.consume('a')).source).to.equal('store')
      expect((await limiter.consume('b')).source).to.equal('store')
    })

    it('is off with local: false, and bounded by its size', async () => {
      const off = createRateLimiter({ store: memoryStore(), limit: 1, window: '1m', local: false })
      await off.consume('k')
      await off.consume('k')
      expect((await off.consume('k')).source).to.equal('store')
      const small = createRateLimiter({
        store: memoryStore(),
        limit: 1,
        window: '1m',
        local: { denyCache: { size: 2 } },
      })
      for (const key of ['a', 'b', 'c']) {
        await small.consume(key)
        await small.consume(key)
      }
      expect((await small.consume('a')).source, 'evicted: the least recently used').to.equal('store')
      expect((await small.consume('c')).source).to.equal('local')
    })
  })

  describe("'auto' leases (fake timers)", () => {
    let clock: sinon.SinonFakeTimers
    beforeEach(() => {
      clock = sinon.useFakeTimers({ now: 1_000_000, toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] })
    })
    afterEach(() => clock.restore())

    it('asks cold keys for single units, and leases a hot key', async () => {
      const limiter = createRateLimiter({
        store: memoryStore({ clock: () => Date.now() }),
        limit: 1_000_000,
        window: '1m',
        local: { lease: 'auto' },
      })
      // Thousands of tenants, each calling about once a second: no lease would be used, none is taken.
      for (let round = 0; round < 3; round++) {
        for (let tenant = 0; tenant < 1_000; tenant++) await limiter.consume(`cold-${tenant}`)
        await clock.tickAsync(1_000)
      }
      expect(limiter.stats()).to.include({ storeCalls: 3_000, leasedUnits: 0, releaseCalls: 0 })

      // No time passes between the hot key's calls, so its rate is the calls so far per 250 ms: the first call is
      // too few to lease; the second leases 2 per 250 ms over the 1000 ms lease, 8 units, which serve the next 7;
      // the tenth leases 10 per 250 ms, 40 units, which serve the rest.
      const sources = []
      for (let i = 0; i < 20; i++) sources.push((await limiter.consume('hot')).source)
      expect(sources).to.deep.equal([
        'store',
        'store',
        ...Array<string>(7).fill('local'),
        'store',
        ...Array<string>(10).fill('local'),
      ])
      expect(limiter.stats()).to.include({ storeCalls: 3_003, localHits: 17, leasedUnits: 48, leaseUsedUnits: 19 })
    })
  })

  describe('fixed leases (fake timers)', () => {
    let clock: sinon.SinonFakeTimers
    beforeEach(() => {
      clock = sinon.useFakeTimers({ now: 1_000_000, toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] })
    })
    afterEach(() => clock.restore())

    it('keeps a lease longer than a Node timer holds (30 days) until its expiry, then returns its unused units', async () => {
      const limiter = createRateLimiter({
        store: memoryStore({ clock: () => Date.now() }),
        limit: 100,
        window: '366d',
        local: { lease: 5, leaseTtlMs: '30d' },
      })
      await limiter.consume('k')
      await clock.tickAsync(10_000)
      expect(limiter.stats()).to.include({ leasedUnits: 5, expiredUnits: 0 })
      expect(await limiter.consume('k')).to.include({ allowed: true, source: 'local' })
      await clock.tickAsync(30 * 86_400_000 - 10_000)
      expect(limiter.stats()).to.include({ leasedUnits: 5, leaseUsedUnits: 2, expiredUnits: 3, returnedUnits: 3 })
    })
  })

  describe('leases on Redis', () => {
    it('a fleet of four processes with the deny cache, then with auto leases, never exceeds the limit', async function () {
      this.timeout(60_000)
      for (const local of [{ denyCache: true }, { lease: 'auto' as const }]) {
        const report = await runFleet({
          redisUrl: redisUrl(),
          limit: 100,
          windowMs: 1_000,
          durationMs: 2_000,
          skewsMs: [0, 0, 0, 0],
          local,
          pace: 'hammer',
        })
        const label = JSON.stringify(local)
        // Local admissions are noted on this machine's clock a little after the fact: allow 5 ms of it.
        expect(report.maxInWindow5msShort, label).to.be.at.most(100)
        expect(report.inWholeWindows, label).to.be.at.least(0.9 * report.idealInWholeWindows)
        expect(report.stats.localHits, label).to.be.above(0)
      }
    })
  })

  describe('the memory store’s model of leases (fast-check, injected clock)', () => {
    type Op =
      | { kind: 'advance'; ms: number }
      | { kind: 'consume'; cost: number }
      | { kind: 'lease'; want: number; ttl: number }
      | { kind: 'use'; units: number }
      | { kind: 'return' }

    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 400 }) }),
      fc.record({ kind: fc.constant('consume' as const), cost: fc.integer({ min: 1, max: 3 }) }),
      fc.record({
        kind: fc.constant('lease' as const),
        want: fc.integer({ min: 1, max: 6 }),
        ttl: fc.integer({ min: 1, max: 300 }),
      }),
      fc.record({ kind: fc.constant('use' as const), units: fc.integer({ min: 1, max: 4 }) }),
      fc.record({ kind: fc.constant('return' as const) }),
    )

    it('random schedules of lease, use, expiry and return never put more than the limit in a window', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 8 }),
          fc.integer({ min: 50, max: 500 }),
          fc.array(op, { maxLength: 80 }),
          async (limit, windowMs, ops) => {
            let now = 0
            const store = memoryStore({ clock: () => now })
            const admissions: number[] = []
            const held: { lease: Lease; expiresAt: number; used: number }[] = []
            const returnExpired = async (all: boolean) => {
              for (const h of held.splice(0)) {
                if (all || now >= h.expiresAt) await store.release('k', h.lease, h.lease.granted - h.used)
                else held.push(h)
              }
            }
            for (const step of ops) {
              if (step.kind === 'advance') now += step.ms
              await returnExpired(false)
              if (step.kind === 'consume') {
                const [r] = await store.consume([{ key: 'k', limit, windowMs, cost: Math.min(step.cost, limit) }])
                if (r?.allowed) for (let i = 0; i < Math.min(step.cost, limit); i++) admissions.push(now)
              } else if (step.kind === 'lease') {
                const want = Math.min(step.want, limit)
                const r = await store.lease({ key: 'k', limit, windowMs, want, min: 1, waitFor: 1, ttlMs: step.ttl })
                if (r.lease.granted > 0) held.push({ lease: r.lease, expiresAt: now + step.ttl, used: 0 })
              } else if (step.kind === 'use') {
                const h = held.find((l) => now < l.expiresAt && l.lease.granted - l.used >= step.units)
                if (h) {
                  h.used += step.units
                  for (let i = 0; i < step.units; i++) admissions.push(now)
                }
              } else if (step.kind === 'return') await returnExpired(true)
            }
            const sorted = admissions.sort((a, b) => a - b)
            for (const t of sorted) {
              const inWindow = sorted.filter((a) => a > t - windowMs && a <= t).length
              expect(inWindow).to.be.at.most(limit)
            }
          },
        ),
        { numRuns: 300 },
      )
    })
  })
})

describe('a cached denial aged', () => {
  it('is, for any figures and any instants, exactly the answer made anew, whichever answer it shares', () => {
    // Microsecond grains, and whole milliseconds among them: the figures' edges are met exactly as well as passed.
    const figure = fc.oneof(
      fc.integer({ min: 1, max: 10_000_000 }),
      fc.integer({ min: 1, max: 1e10 }).map((n) => n / 1000),
    )
    // A step back too: a clock that stepped back is not answered with a later instant's figures.
    const step = fc.oneof(
      fc.constantFrom(0, 1, -1),
      fc.integer({ min: -1_000, max: 3_000 }).map((n) => n / 1000),
    )
    fc.assert(
      fc.property(figure, figure, fc.array(step, { maxLength: 60 }), (a, b, steps) => {
        const decision: Decision = {
          allowed: false,
          limit: 10,
          remaining: 0,
          retryAfterMs: Math.min(a, b),
          resetMs: Math.max(a, b),
          source: 'store',
          policy: 'p',
        }
        const entry: DenyEntry = {
          until: 0,
          cost: 1,
          limits: 10,
          decision,
          at: 0,
          dropped: false,
          aged: undefined,
        }
        let elapsed = 0
        for (const step of steps) {
          elapsed += step
          expect(agedDenial(entry, elapsed)).to.deep.equal(age(decision, elapsed, 'local'))
        }
      }),
      { numRuns: 1_000 },
    )
  })
})
