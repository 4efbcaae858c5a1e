import { createRateLimiter, definePolicy, memoryStore, redisStore, type Store } from '@fleetlimit/core'
import { expect } from 'chai'
import type { Redis } from 'ioredis'
import { type Calendar, periodAt } from '../../../packages/core/src/common/calendar.js'
import type { WindowRequest } from '../../../packages/core/src/store/store.js'
import { redisClient, uniquePrefix } from '../../support/redis.js'

// Calendar quotas on both stores: the memory store on a test clock (2024-02-10 12:00 UTC, in a leap year), Redis on
// its own clock, each answer checked against the period that holds the store's own now (a result's `now`).
const FEB_10 = Date.parse('2024-02-10T12:00:00Z')

/** The exact wait from a store's `now` (ms, from the server's µs) to the end of its period. */
const untilEnd = (calendar: Calendar, now: number) => {
  const { end } = periodAt(calendar, now)
  return Math.ceil((end * 1000 - Math.round(now * 1000)) / 1000)
}

describe('calendar quotas on the memory store and on Redis', () => {
  let client: Redis
  before(() => {
    client = redisClient()
  })
  after(() => client.disconnect())

  const kinds: { name: string; make: () => Store; prefix: () => string }[] = [
    { name: 'memoryStore', make: () => memoryStore({ clock: () => FEB_10 }), prefix: () => '' },
    {
      name: 'redisStore',
      make: () => redisStore(client, { prefix: lastPrefix }),
      prefix: () => lastPrefix,
    },
  ]
  let lastPrefix = uniquePrefix()
  beforeEach(() => {
    lastPrefix = uniquePrefix()
  })

  for (const kind of kinds) {
    describe(kind.name, () => {
      it('a daily 3 in Pacific/Auckland admits 3 of 4; the 4th waits until the next Auckland midnight', async () => {
        const store = kind.make()
        const calendar: Calendar = { unit: 'day', timeZone: 'Pacific/Auckland' }
        const request: WindowRequest = { key: 'daily:{t}', limit: 3, windowMs: 90_000_000, cost: 1, period: calendar }
        const results = []
        for (let i = 0; i < 4; i++) results.push(...(await store.consume([request])))
        expect(results.map((r) => [r.allowed, r.remaining])).to.deep.equal([
          [true, 2],
          [true, 1],
          [true, 0],
          [false, 0],
        ])
        const denied = results[3] as (typeof results)[number]
        expect(denied.retryAfterMs).to.equal(untilEnd(calendar, denied.now))
        expect(denied.resetMs).to.equal(denied.retryAfterMs)
        if (kind.name === 'memoryStore') {
          // 2024-02-11 00:00 in Auckland (NZDT, +13) is 2024-02-10 11:00 UTC: 23 hours after the test clock's noon.
          expect(denied.retryAfterMs).to.equal(Date.parse('2024-02-10T11:00:00Z') + 86_400_000 - FEB_10)
        }
      })

      it('a monthly 2 with anchors 31 and 1 waits until the next anchored start', async () => {
        const store = kind.make()
        for (const anchor of [31, 1]) {
          const calendar: Calendar = { unit: 'month', timeZone: 'UTC', anchor }
          const request = { key: `monthly:{a${anchor}}`, limit: 2, windowMs: 1, cost: 1, period: calendar }
          const results = []
          for (let i = 0; i < 3; i++) results.push(...(await store.consume([request])))
          expect(results.map((r) => r.allowed)).to.deep.equal([true, true, false])
          const denied = results[2] as (typeof results)[number]
          expect(denied.retryAfterMs, `anchor ${anchor}`).to.equal(untilEnd(calendar, denied.now))
          if (kind.name === 'memoryStore') {
            // Anchor 31 starts on the 29th in February 2024 (clamped); anchor 1 on March 1st.
            const next = anchor === 31 ? '2024-02-29T00:00:00Z' : '2024-03-01T00:00:00Z'
            expect(denied.retryAfterMs, `anchor ${anchor}`).to.equal(Date.parse(next) - FEB_10)
          }
        }
      })

      it('a sliding 100/s stacked with a monthly 3 denies the 4th call by the monthly policy, in one call', async () => {
        const burst = definePolicy({ name: 'burst', limit: 100, window: '1s' })
        const quota = definePolicy({ name: 'quota', limit: 3, period: 'month', timeZone: 'Europe/Berlin' })
        const limiter = createRateLimiter({ store: kind.make(), policies: [burst, quota], local: false })
        const decisions = []
        for (let i = 0; i < 4; i++) decisions.push(await limiter.consume('acme'))
        expect(decisions.map((d) => [d.allowed, d.policy])).to.deep.equal([
          [true, 'quota'],
          [true, 'quota'],
          [true, 'quota'],
          [false, 'quota'],
        ])
        // The denial recorded nothing anywhere: the burst window holds the three admissions only.
        const peek = await limiter.peek('acme')
        expect(peek.policies?.map((d) => [d.policy, d.remaining])).to.deep.equal([
          ['burst', 97],
          ['quota', 0],
        ])
        // One store call per decision and one for the peek, each deciding both policies.
        expect(limiter.stats().storeCalls).to.equal(5)
      })

      it('refunds, settles, pauses, resets and shadows a period as a window', async () => {
        const store = kind.make()
        const quota = { limit: 5, period: 'month' as const }
        const limiter = createRateLimiter({ store, ...quota, name: 'plan', local: false })
        const first = await limiter.consume('t', { cost: 2 })
        expect((await limiter.refund(first)).outcome).to.equal('refunded')
        expect((await limiter.peek('t')).remaining).to.equal(5)
        const second = await limiter.consume('t', { cost: 1 })
        expect(await limiter.settle(second, { cost: 4 })).to.deep.equal({ outcome: 'settled', overLimit: 0 })
        expect((await limiter.settle(second, { cost: 4 })).outcome).to.equal('already-settled')
        expect((await limiter.peek('t')).remaining).to.equal(1)
        // The refund after a settle takes back what the settle moved too.
        expect(await limiter.refund(second)).to.deep.equal({ units: 4, outcome: 'refunded' })
        expect((await limiter.peek('t')).remaining).to.equal(5)

        const pausedAt = performance.now()
        await limiter.pause('t', 60_000)
        const paused = await limiter.consume('t')
        // The pause's end, less the ms the server's clock moved between the pause and the call.
        expect(paused.allowed).to.equal(false)
        expect(paused.retryAfterMs).to.be.within(60_000 - Math.ceil(performance.now() - pausedAt), 60_000)
        await limiter.reset('t')
        expect((await limiter.consume('t', { cost: 5 })).allowed).to.equal(true)

        const shadow = createRateLimiter({ store, ...quota, name: 'shadow', shadow: true, local: false })
        const over = []
        for (let i = 0; i < 6; i++) over.push(await shadow.consume('t'))
        expect(over.map((d) => [d.allowed, d.shadowDenied ?? false])).to.deep.equal([
          [true, false],
          [true, false],
          [true, false],
          [true, false],
          [true, false],
          [true, true],
        ])
      })

      it('gives a tenant moved to a higher plan mid-period the difference at once, its count kept', async () => {
        const limiter = createRateLimiter({ store: kind.make(), limit: 2, period: 'month', local: false })
        await limiter.consume('t')
        await limiter.consume('t')
        expect((await limiter.consume('t')).allowed).to.equal(false)
        const upgraded = await limiter.consume('t', { limit: 5 })
        expect([upgraded.allowed, upgraded.remaining]).to.deep.equal([true, 2])
      })

      it('10,000 concurrent calls on a daily 100 stacked with a sliding 1,000/s: exactly 100 admitted, all by the day', async function () {
        this.timeout(60_000)
        const limiter = createRateLimiter({
          store: kind.make(),
          policies: [
            // A deadline far beyond the burst: this asserts what is decided, not how fast (a busy CI machine).
            { name: 'burst', limit: 1_000, window: '1s', timeoutMs: '20s' },
            { name: 'daily', limit: 100, period: 'day', timeZone: 'Pacific/Auckland', timeoutMs: '20s' },
          ],
          local: false,
        })
        const decisions = await Promise.all(Array.from({ length: 10_000 }, () => limiter.consume('hot')))
        expect(decisions.filter((d) => d.allowed)).to.have.length(100)
        const denied = decisions.filter((d) => !d.allowed)
        expect(new Set(denied.map((d) => d.policy))).to.deep.equal(new Set(['daily']))
        expect((await limiter.peek('hot')).remaining).to.equal(0)
      })
    })
  }

  it('keeps a monthly 1,000,000 in under 256 bytes of Redis after 5,000 admissions', async () => {
    const prefix = uniquePrefix()
    const limiter = createRateLimiter({
      store: redisStore(client, { prefix }),
      name: 'monthly',
      limit: 1_000_000,
      period: 'month',
      local: false,
    })
    const calls = []
    for (let i = 0; i < 5_000; i++) calls.push(limiter.consume('big'))
    const decisions = await Promise.all(calls)
    expect(decisions.filter((d) => d.allowed)).to.have.length(5_000)
    expect((await limiter.peek('big')).remaining).to.equal(995_000)
    const keys = await client.keys(`${prefix}:*`)
    expect(keys).to.deep.equal([`${prefix}:monthly~pd1-month-UTC:{big}`])
    const bytes = Number(await client.call('MEMORY', 'USAGE', keys[0] as string))
    expect(bytes).to.be.below(256)
    // It expires when its period ends.
    const expiresAt = await client.pexpiretime(keys[0] as string)
    expect(expiresAt).to.equal(periodAt({ unit: 'month', timeZone: 'UTC' }, Date.now()).end)
  })
})
