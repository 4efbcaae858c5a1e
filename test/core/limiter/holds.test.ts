import { createRateLimiter, isFleetlimitError, memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'
import { describeHoldsAndRefunds } from '../../support/holds.js'
import { storeKinds, useStoreClients } from '../../support/stores.js'

describe('blocks, pauses, shadow mode and refunds', () => {
  useStoreClients()
  for (const kind of storeKinds) describeHoldsAndRefunds(kind.name, () => kind.make())

  describe('exact times (memory store, injected clock)', () => {
    let now = 0
    const store = () => memoryStore({ clock: () => now })
    beforeEach(() => {
      now = 0
    })

    it('a block lasts exactly blockFor from the denial that started it; a denial during it does not extend it', async () => {
      const limiter = createRateLimiter({ store: store(), limit: 1, window: 1_000, blockFor: 3_000, local: false })
      await limiter.consume('t')
      now = 100
      expect(await limiter.consume('t')).to.include({ allowed: false, retryAfterMs: 3_000 })
      now = 2_000
      expect(await limiter.consume('t')).to.include({ allowed: false, retryAfterMs: 1_100 })
      now = 3_099
      expect(await limiter.consume('t')).to.include({ allowed: false, retryAfterMs: 1 })
      now = 3_100
      expect(await limiter.consume('t')).to.include({ allowed: true, remaining: 0 })
    })

    it('a pause ends exactly when it says; the window’s own wait counts if it is later', async () => {
      const limiter = createRateLimiter({ store: store(), limit: 1, window: 1_000, local: false })
      await limiter.consume('t')
      await limiter.pause('t', 500)
      now = 200
      expect(await limiter.consume('t'), 'the window wait is later').to.include({ allowed: false, retryAfterMs: 800 })
      await limiter.pause('t', 2_000)
      expect(await limiter.consume('t')).to.include({ allowed: false, retryAfterMs: 2_000 })
      now = 2_200
      expect(await limiter.consume('t')).to.include({ allowed: true })
    })

    it('a refund removes that decision’s units, not the key’s oldest', async () => {
      const limiter = createRateLimiter({ store: store(), limit: 5, window: 1_000, local: false })
      const first = await limiter.consume('t', { cost: 3 })
      now = 500
      await limiter.consume('t', { cost: 2 })
      expect(await limiter.refund(first)).to.deep.equal({ units: 3, outcome: 'refunded' })
      now = 600
      expect((await limiter.consume('t', { cost: 3 })).allowed).to.equal(true)
      now = 700
      // The window holds 2 units at 500 and 3 at 600: one more fits when those at 500 leave.
      expect(await limiter.consume('t')).to.include({ allowed: false, retryAfterMs: 800 })
      now = 1_700
      expect(await limiter.refund(first), 'already refunded').to.include({ outcome: 'already-refunded' })
      const late = await limiter.consume('t')
      now = 2_800
      expect(await limiter.refund(late), 'its units left the window').to.deep.equal({ units: 0, outcome: 'expired' })
    })

    it('a refund with more than 2,000 later entries reports too-deep and changes nothing, as on Redis', async () => {
      const limiter = createRateLimiter({ store: store(), limit: 5_000, window: 3_600_000, local: false })
      const refundAfter = async (tenant: string, later: number) => {
        const d = await limiter.consume(tenant, { cost: 2 })
        for (let i = 0; i < later; i++) {
          now++
          await limiter.consume(tenant)
        }
        return limiter.refund(d)
      }
      expect(await refundAfter('a', 2_000)).to.deep.equal({ units: 2, outcome: 'refunded' })
      expect(await refundAfter('b', 2_001)).to.deep.equal({ units: 0, outcome: 'too-deep' })
      expect(await limiter.peek('b')).to.include({ remaining: 5_000 - 2_003 })
    })

    it('a refund the store fails rejects with a StoreError and can be tried again', async () => {
      const inner = store()
      let fail = true
      const flaky = {
        ...inner,
        refund: async (...args: Parameters<NonNullable<typeof inner.refund>>) => {
          if (fail) throw new Error('connection lost')
          return (inner.refund as NonNullable<typeof inner.refund>)(...args)
        },
      }
      const limiter = createRateLimiter({ store: flaky, limit: 1, window: 1_000, local: false, logger: { warn() {} } })
      const d = await limiter.consume('t')
      const error = await limiter.refund(d).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE'), String(error)).to.equal(true)
      fail = false
      expect(await limiter.refund(d)).to.deep.equal({ units: 1, outcome: 'refunded' })
    })

    it('rejects bad options with a coded error', () => {
      expect(() => createRateLimiter({ limit: 1, window: 1_000, blockFor: -1 })).to.throw(/blockFor/)
      expect(() => createRateLimiter({ limit: 1, window: 1_000, blockFor: '1y' as '1d' })).to.throw(/blockFor/)
      expect(() => createRateLimiter({ limit: 1, window: 1_000, shadow: 'yes' as unknown as boolean })).to.throw(
        /shadow/,
      )
    })
  })
})
