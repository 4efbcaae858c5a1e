import { createRateLimiter, type Decision, definePolicy, isFleetlimitError, type Store } from '@fleetlimit/core'
import { expect } from 'chai'
import sinon from 'sinon'
import { optionErrorOf, optionErrorOfAsync } from '../../support/option-error.js'
import { storeKinds, useStoreClients } from '../../support/stores.js'

const rpm = definePolicy({ name: 'rpm', limit: 100, window: '1m' })
const tpm = definePolicy({ name: 'tpm', limit: 1_000, window: '1m' })
const parallel = definePolicy({ name: 'parallel', concurrency: 2 })

/** A promise's state now, without waiting for it. */
async function settledYet(promise: Promise<unknown>): Promise<boolean> {
  let done = false
  promise.then(
    () => {
      done = true
    },
    () => {
      done = true
    },
  )
  await new Promise((resolve) => setImmediate(resolve))
  return done
}

describe('in-flight policies', () => {
  useStoreClients()
  afterEach(() => sinon.restore())

  for (const kind of storeKinds) {
    describe(kind.name, () => {
      let store: Store
      beforeEach(() => {
        store = kind.make()
      })

      it('admits `concurrency` calls at once, denies the next until a release, and releases once', async () => {
        const limiter = createRateLimiter({ store, policies: [rpm, parallel] })
        const a = await limiter.consume('acme')
        const b = await limiter.consume('acme')
        const c = await limiter.consume('acme')
        expect([a.allowed, b.allowed, c.allowed]).to.deep.equal([true, true, false])
        expect(c.policy).to.equal('parallel')
        expect(c.policies?.map((d) => [d.policy, d.remaining])).to.deep.equal([
          ['rpm', 98],
          ['parallel', 0],
        ])
        // The denied call took no request from the rate window.
        expect((await limiter.peek('acme')).policies?.[0]?.remaining).to.equal(98)
        expect(await limiter.release(a)).to.deep.equal({ slots: 1, outcome: 'released' })
        expect(await limiter.release(a)).to.deep.equal({ slots: 0, outcome: 'already-released' })
        expect((await limiter.consume('acme')).allowed).to.equal(true)
        expect((await limiter.consume('acme')).allowed).to.equal(false)
      })

      it('10,000 concurrent releases of one decision free its slot once', async () => {
        const limiter = createRateLimiter({ store, policies: [parallel] })
        const free = sinon.spy(store, 'free')
        const a = await limiter.consume('acme')
        await limiter.consume('acme')
        const results = await Promise.all(Array.from({ length: 10_000 }, () => limiter.release(a)))
        expect(results.filter((r) => r.outcome === 'released')).to.have.length(1)
        expect(results.filter((r) => r.outcome === 'already-released')).to.have.length(9_999)
        expect(free.callCount).to.equal(1)
        // One slot came back, not more.
        expect((await limiter.consume('acme')).allowed).to.equal(true)
        expect((await limiter.consume('acme')).allowed).to.equal(false)
      })

      it('a release sent again after it reported expired still says expired, concurrent ones too', async () => {
        const limiter = createRateLimiter({ store, policies: [parallel] })
        const a = await limiter.consume('acme')
        // A reset frees every slot of the key: the decision's slot is gone when it is released.
        await limiter.reset('acme')
        const first = await Promise.all([limiter.release(a), limiter.release(a)])
        expect(first).to.deep.equal([
          { slots: 0, outcome: 'expired' },
          { slots: 0, outcome: 'expired' },
        ])
        expect(await limiter.release(a), 'sent again').to.deep.equal({ slots: 0, outcome: 'expired' })
      })

      it('a forged decision, a denied one, or another limiter’s gives back nothing', async () => {
        const limiter = createRateLimiter({ store, policies: [parallel] })
        const other = createRateLimiter({ store, policies: [parallel] })
        const a = await limiter.consume('acme')
        const b = await limiter.consume('acme')
        const denied = await limiter.consume('acme')
        expect(await limiter.release({ ...a })).to.deep.equal({ slots: 0, outcome: 'not-releasable' })
        expect(await limiter.release(Object.create(a) as Decision)).to.deep.equal({
          slots: 0,
          outcome: 'not-releasable',
        })
        expect(await other.release(b)).to.deep.equal({ slots: 0, outcome: 'not-releasable' })
        expect(await limiter.release(denied)).to.deep.equal({ slots: 0, outcome: 'denied' })
        expect(await limiter.release(undefined as unknown as Decision)).to.deep.equal({
          slots: 0,
          outcome: 'not-releasable',
        })
        expect((await limiter.consume('acme')).allowed).to.equal(false)
      })

      it('acquire waits for a slot and takes it when one is released, first in first out', async () => {
        const limiter = createRateLimiter({ store, policies: [parallel] })
        const held = [await limiter.consume('acme'), await limiter.consume('acme')]
        const order: string[] = []
        const first = limiter.acquire('acme').then((d) => {
          order.push('first')
          return d
        })
        const second = limiter.acquire('acme').then((d) => {
          order.push('second')
          return d
        })
        expect(await settledYet(first)).to.equal(false)
        await limiter.release(held[0] as Decision)
        const admitted = await first
        expect(admitted.allowed).to.equal(true)
        expect(await settledYet(second)).to.equal(false)
        await limiter.release(held[1] as Decision)
        expect((await second).allowed).to.equal(true)
        expect(order).to.deep.equal(['first', 'second'])
      })

      it('a waiter whose deadline comes before the slots expire still waits for a release', async () => {
        const limiter = createRateLimiter({ store, policies: [rpm, parallel] })
        const held = await limiter.consume('acme')
        await limiter.consume('acme')
        // The wait reported is until a slot expires (a minute), but a release may come any time before.
        const waiting = limiter.acquire('acme', { maxWaitMs: '10s' })
        expect(await settledYet(waiting)).to.equal(false)
        const second = limiter.acquire('acme', { maxWaitMs: '5s' })
        expect(await settledYet(second)).to.equal(false)
        await limiter.release(held)
        const first = await waiting
        expect(first.allowed).to.equal(true)
        expect(await settledYet(second)).to.equal(false)
        await limiter.release(first)
        expect((await second).allowed).to.equal(true)
      })

      it('a waiter that gives up leaves no slot behind', async () => {
        const limiter = createRateLimiter({ store, policies: [parallel] })
        const held = [await limiter.consume('acme'), await limiter.consume('acme')]
        const error = await limiter.acquire('acme', { maxWaitMs: 0 }).catch((e: unknown) => e)
        expect(isFleetlimitError(error) && error.code).to.equal('ERR_FLEETLIMIT_TIMEOUT')
        await limiter.release(held[0] as Decision)
        await limiter.release(held[1] as Decision)
        expect((await limiter.peek('acme')).remaining).to.equal(2)
      })

      it('extend keeps a slot; a released one cannot be extended', async () => {
        const limiter = createRateLimiter({ store, policies: [definePolicy({ concurrency: 1, slotTtlMs: '10s' })] })
        const a = await limiter.consume('acme')
        expect(typeof a.extend).to.equal('function')
        expect(Object.keys(a)).to.not.include('extend')
        expect(await a.extend?.('1h')).to.equal(true)
        const denied = await limiter.consume('acme')
        expect(denied.retryAfterMs).to.be.within(3_599_000, 3_600_000)
        await limiter.release(a)
        expect(await a.extend?.('1h')).to.equal(false)
        expect((await limiter.consume('acme')).allowed).to.equal(true)
      })

      it('settle down gives back the difference exactly; settle up records the extra and reports the overage', async () => {
        const limiter = createRateLimiter({ store, policies: [rpm, tpm, parallel] })
        const a = await limiter.acquire('acme', { cost: { tpm: 500 } })
        expect(a.policies?.map((d) => d.remaining)).to.deep.equal([99, 500, 1])
        expect(await limiter.settle(a, { cost: { tpm: 120 } })).to.deep.equal({ outcome: 'settled', overLimit: 0 })
        expect((await limiter.peek('acme')).policies?.map((d) => d.remaining)).to.deep.equal([99, 880, 1])
        // The same settle sent again changes nothing more; another cost is a mistake.
        expect((await limiter.settle(a, { cost: { tpm: 120 } })).outcome).to.equal('already-settled')
        const mistake = await optionErrorOfAsync(() => limiter.settle(a, { cost: { tpm: 121 } }))
        expect(mistake.code).to.equal('ERR_FLEETLIMIT_OPTION')
        expect((await limiter.peek('acme')).policies?.map((d) => d.remaining)).to.deep.equal([99, 880, 1])

        const b = await limiter.consume('acme', { cost: { tpm: 800 } })
        expect(b.allowed).to.equal(true)
        expect(await limiter.settle(b, { cost: { tpm: 1_300 } })).to.deep.equal({
          outcome: 'settled',
          overLimit: 420,
          overPolicy: 'tpm',
        })
        const next = await limiter.consume('acme', { cost: { tpm: 1 } })
        expect(next.allowed).to.equal(false)
        expect(next.policy).to.equal('tpm')
        // A refund after a settle gives back the settled units.
        expect(await limiter.refund(b)).to.deep.equal({ units: 1_300, outcome: 'refunded' })
        expect((await limiter.peek('acme')).policies?.map((d) => d.remaining)).to.deep.equal([99, 880, 0])
        expect((await limiter.settle(b, { cost: { tpm: 1_300 } })).outcome).to.equal('already-settled')
      })

      it('a settle of NaN, a negative, a fraction or a huge cost is refused with a clear error and records nothing', async () => {
        const limiter = createRateLimiter({ store, policies: [rpm, tpm] })
        const a = await limiter.consume('acme', { cost: { tpm: 10 } })
        for (const cost of [Number.NaN, -1, 1.5, 2e9, Number.POSITIVE_INFINITY, '5', { tpm: -3 }, { nope: 3 }]) {
          const error = await optionErrorOfAsync(() => limiter.settle(a, { cost: cost as number }))
          expect(error.code, String(cost)).to.equal('ERR_FLEETLIMIT_OPTION')
          expect(error.message).to.match(/settle cost/)
        }
        expect((await limiter.peek('acme')).policies?.map((d) => d.remaining)).to.deep.equal([99, 990])
        expect(await limiter.settle(a, { cost: 4 })).to.deep.equal({ outcome: 'settled', overLimit: 0 })
        expect((await limiter.peek('acme')).policies?.map((d) => d.remaining)).to.deep.equal([96, 996])
      })

      it('10,000 concurrent settles of one decision apply it once', async () => {
        const limiter = createRateLimiter({ store, policies: [tpm] })
        const a = await limiter.consume('acme', { cost: 100 })
        const results = await Promise.all(Array.from({ length: 10_000 }, () => limiter.settle(a, { cost: 300 })))
        expect(results.filter((r) => r.outcome === 'settled')).to.have.length(1)
        expect((await limiter.peek('acme')).remaining).to.equal(700)
      })
    })
  }
})

describe('in-flight policy options', () => {
  it('refuses what means nothing for slots, naming the option', () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ concurrency: 0 }, 'concurrency'],
      [{ concurrency: 1.5 }, 'concurrency'],
      [{ concurrency: 2, limit: 5 }, 'limit'],
      [{ concurrency: 2, window: '1m' }, 'window'],
      [{ concurrency: 2, cost: 2 }, 'cost'],
      [{ concurrency: 2, blockFor: '1m' }, 'blockFor'],
      [{ concurrency: 2, algorithm: 'bucketed' }, 'algorithm'],
      [{ concurrency: 2, onStoreError: 'fail-open', fallback: { limit: 1 } }, 'fallback'],
      [{ concurrency: 2, slotTtlMs: 0 }, 'slotTtlMs'],
      [{ limit: 2, window: '1m', slotTtlMs: '1m' }, 'slotTtlMs'],
    ]
    for (const [options, option] of cases) {
      const error = optionErrorOf(() => definePolicy(options as never))
      expect(error.code, JSON.stringify(options)).to.equal('ERR_FLEETLIMIT_OPTION')
      expect(error.option, JSON.stringify(options)).to.equal(option)
    }
  })

  it('a spread in-flight policy builds the same limiter', () => {
    const policy = definePolicy({ name: 'p', concurrency: 3, slotTtlMs: '30s' })
    const limiter = createRateLimiter({ ...policy })
    expect(limiter.policy).to.include({ name: 'p', concurrency: 3, slotTtlMs: 30_000, limit: 3, window: 30_000 })
  })

  it('a cost map names policies of the limiter', async () => {
    const limiter = createRateLimiter({ policies: [rpm, tpm] })
    const error = await optionErrorOfAsync(() => limiter.consume('a', { cost: { tokens: 5 } as never }))
    expect(error.option).to.equal('cost.tokens')
    const tooBig = await optionErrorOfAsync(() => limiter.consume('a', { cost: { tpm: 1_001 } }))
    expect(tooBig.option).to.equal('cost.tpm')
  })
})
