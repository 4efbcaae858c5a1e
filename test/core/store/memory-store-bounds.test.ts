import { createRateLimiter, isFleetlimitError, memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'
import { SWEEP_VISITS_PER_CALL } from '../../../packages/core/src/store/memory/sweep.js'
import type { WindowResult } from '../../../packages/core/src/store/store.js'

/** The rejection of `call`, which must reject. */
async function rejectionOf(call: Promise<unknown>): Promise<unknown> {
  try {
    await call
  } catch (error) {
    return error
  }
  expect.fail('the call was expected to reject')
}

describe('memoryStore bounds', () => {
  it('admits a cost of 200 000 000 as one entry, and later decisions stay exact to the unit', async () => {
    let now = 1_000_000
    const store = memoryStore({ clock: () => now })
    const big = { key: 'k', limit: 1_000_000_000, windowMs: 60_000, cost: 200_000_000 }
    const consume = async (cost: number) => ((await store.consume([{ ...big, cost }])) as [WindowResult])[0]

    expect(await consume(200_000_000)).to.include({ allowed: true, remaining: 800_000_000, resetMs: 60_000 })
    for (const remaining of [600_000_000, 400_000_000, 200_000_000, 0]) {
      now += 1_000
      expect(await consume(200_000_000)).to.include({ allowed: true, remaining })
    }
    now += 500
    const peeked = ((await store.peek([{ ...big, cost: 1 }])) as [WindowResult])[0]
    expect(peeked).to.include({ allowed: false, remaining: 0, resetMs: 55_500 + 4_000 })
    // The wait is until the (used + cost - limit)-th oldest unit leaves: the first admission's
    // 200 000 000 units cover a cost up to that, one unit more needs the second admission too.
    expect(await consume(1)).to.include({ allowed: false, retryAfterMs: 55_500 })
    expect(await consume(200_000_000)).to.include({ allowed: false, retryAfterMs: 55_500 })
    expect(await consume(200_000_001)).to.include({ allowed: false, retryAfterMs: 56_500 })
    now += 55_500
    expect(await consume(200_000_000)).to.include({ allowed: true, remaining: 0 })
  })

  it('records an admission made while a lease is out at its expiry, and releases exactly the units named', async () => {
    let now = 1_000
    const store = memoryStore({ clock: () => now })
    const window = { key: 'k', limit: 10, windowMs: 1_000 }
    const leased = await store.lease({ ...window, want: 4, min: 1, waitFor: 1, ttlMs: 300 })
    expect(leased).to.include({ allowed: true, remaining: 6 })
    expect(leased.lease.score).to.equal(1_300)
    now += 100
    expect(((await store.consume([{ ...window, cost: 6 }])) as [WindowResult])[0]).to.include({ remaining: 0 })
    await store.release('k', leased.lease, 3)
    // The admission of 1 100 was recorded at the lease's 1 300, as lua/sliding-log.lua records it: 7 units leave at 2 300.
    const peeked = ((await store.peek([{ ...window, cost: 3 }])) as [WindowResult])[0]
    expect(peeked).to.include({ allowed: true, remaining: 3, resetMs: 1_200 })
    expect(((await store.consume([{ ...window, cost: 4 }])) as [WindowResult])[0]).to.include({
      allowed: false,
      retryAfterMs: 1_200,
    })
  })

  it('keeps a log whose lease was released in full: its emptied entry still bounds the next record, after a peek and a sweep', async () => {
    let now = 1_000
    const store = memoryStore({ clock: () => now })
    const window = { key: 'k', limit: 1, windowMs: 1_000 }
    const leased = await store.lease({ ...window, want: 1, min: 1, waitFor: 1, ttlMs: 2_000 })
    await store.release('k', leased.lease, 1)
    expect(((await store.peek([{ ...window, cost: 1 }])) as [WindowResult])[0]).to.include({ remaining: 1, resetMs: 0 })
    expect(store.sweep(), 'a sweep drops no log with an entry still ahead').to.equal(0)
    expect(store.size).to.equal(1)
    // Recorded at the emptied entry's 3 000, as lua/sliding-log.lua records it, not at 1 000.
    expect(((await store.consume([{ ...window, cost: 1 }])) as [WindowResult])[0]).to.include({
      allowed: true,
      recorded: 3_000,
      resetMs: 3_000,
    })
    now = 4_000
    expect(store.sweep(), 'gone once its newest entry left the window').to.equal(1)
  })

  describe('a key asked with the other algorithm', () => {
    const slidingLog = { key: 'k', limit: 5, windowMs: 10_000, cost: 1 }
    const bucketed = { ...slidingLog, buckets: 10 }

    it('rejects a bucketed call on a sliding-log key with a StoreError, and leaves the key intact', async () => {
      const store = memoryStore()
      await store.consume([slidingLog])
      const error = await rejectionOf(store.consume([bucketed]))
      expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE'), String(error)).to.equal(true)
      expect((error as Error).message).to.match(/key "k" holds a sliding-log window/)
      expect(isFleetlimitError(await rejectionOf(store.peek([bucketed])), 'ERR_FLEETLIMIT_STORE')).to.equal(true)
      expect(((await store.peek([slidingLog])) as [WindowResult])[0]).to.include({ remaining: 4 })
    })

    it('rejects a sliding-log call, a lease and a multi-window call on a bucketed key, recording nothing', async () => {
      const store = memoryStore()
      await store.consume([bucketed])
      const error = await rejectionOf(store.consume([slidingLog]))
      expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE'), String(error)).to.equal(true)
      expect((error as Error).message).to.match(/key "k" holds a bucketed window/)
      const lease = store.lease({ key: 'k', limit: 5, windowMs: 10_000, want: 2, min: 1, waitFor: 1, ttlMs: 100 })
      expect(isFleetlimitError(await rejectionOf(lease), 'ERR_FLEETLIMIT_STORE')).to.equal(true)
      const other = { ...slidingLog, key: 'other' }
      const multi = await rejectionOf(store.consume([other, slidingLog]))
      expect(isFleetlimitError(multi, 'ERR_FLEETLIMIT_STORE')).to.equal(true)
      expect(store.size, 'the multi-window call created no entry for `other`').to.equal(1)
      expect(((await store.peek([bucketed])) as [WindowResult])[0]).to.include({ remaining: 4 })
    })
  })

  describe('sweep and key cap', () => {
    const request = (key: string) => ({ key, limit: 5, windowMs: 1_000, cost: 1 })

    it('sweeps through decisions a bounded slice of keys per call, resuming where it left off', async () => {
      let now = 0
      const store = memoryStore({ clock: () => now, sweepIntervalMs: 5_000 })
      const idle = Math.floor(3.5 * SWEEP_VISITS_PER_CALL)
      for (let i = 0; i < idle; i++) await store.consume([request(`k${i}`)])
      now = 6_000
      const sizes: number[] = []
      for (let call = 0; call < 5; call++) {
        await store.consume([request('live')])
        sizes.push(store.size)
      }
      const slice = SWEEP_VISITS_PER_CALL
      // Each call visits one slice of the idle keys (all dropped); the fourth reaches the end of the pass.
      expect(sizes).to.deep.equal([idle - slice + 1, idle - 2 * slice + 1, idle - 3 * slice + 1, 1, 1])
    })

    it('refuses a new key with a StoreError when maxKeys are held, while held keys keep working', async () => {
      let now = 0
      const store = memoryStore({ clock: () => now, maxKeys: 3 })
      for (const key of ['a', 'b', 'c']) await store.consume([request(key)])
      const error = await rejectionOf(store.consume([request('d')]))
      expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE'), String(error)).to.equal(true)
      expect((error as Error).message).to.match(/memory store full: .*maxKeys \(3\)/)
      const lease = store.lease({ ...request('d'), want: 2, min: 1, waitFor: 1, ttlMs: 100 })
      expect(isFleetlimitError(await rejectionOf(lease), 'ERR_FLEETLIMIT_STORE')).to.equal(true)
      expect(isFleetlimitError(await rejectionOf(store.consume([request('a'), request('e')])))).to.equal(true)
      expect(store.size).to.equal(3)

      expect(((await store.consume([request('a')])) as [WindowResult])[0]).to.include({ allowed: true, remaining: 3 })
      // A peek records nothing, so it needs no room.
      expect(((await store.peek([request('d')])) as [WindowResult])[0]).to.include({ allowed: true, remaining: 5 })
      expect(store.size).to.equal(3)

      // Once held keys are idle, a new key takes their room at once, not at the next timed sweep.
      now = 1_000
      expect(((await store.consume([request('d')])) as [WindowResult])[0]).to.include({ allowed: true })
      expect(store.size).to.equal(1)
    })

    it('lets the limiter fail closed or open on a full store, per the policy', async () => {
      const quiet = { warn: () => {} }
      const closed = createRateLimiter({ store: memoryStore({ maxKeys: 1 }), limit: 5, window: '1s', logger: quiet })
      expect((await closed.consume('t1')).allowed).to.equal(true)
      const error = await rejectionOf(closed.consume('t2'))
      expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE')).to.equal(true)
      expect(closed.stats()).to.include({ storeErrors: 1 })

      const open = createRateLimiter({
        store: memoryStore({ maxKeys: 1 }),
        limit: 5,
        window: '1s',
        onStoreError: 'fail-open',
        logger: quiet,
      })
      await open.consume('t1')
      expect(await open.consume('t2')).to.include({ allowed: true, source: 'open' })
    })

    it('validates maxKeys', () => {
      expect(memoryStore({ maxKeys: 1 }).size).to.equal(0)
      for (const maxKeys of [0, 1.5, '10', -1]) {
        expect(() => memoryStore({ maxKeys: maxKeys as number }), String(maxKeys)).to.throw(
          /invalid option `memoryStore\.maxKeys`.*whole number/,
        )
      }
    })
  })
})
