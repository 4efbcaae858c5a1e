import { createRateLimiter, memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'
import { optionErrorOfAsync } from '../../support/option-error.js'
import { describePlans } from '../../support/plans.js'
import { storeKinds, useStoreClients } from '../../support/stores.js'

describe('per-call limits', () => {
  useStoreClients()
  for (const kind of storeKinds) describePlans(kind.name, () => kind.make())

  it('a downgrade’s wait is exact: until the window holds one unit fewer than the new limit (injected clock)', async () => {
    let now = 0
    const store = memoryStore({ clock: () => now })
    const limiter = createRateLimiter({ store, limit: 100, window: 1_000, local: false })
    for (let i = 0; i < 5; i++) {
      now = i * 10
      await limiter.consume('t', { limit: 5 })
    }
    now = 100
    // Units at 0, 10, 20, 30, 40: under a limit of 2, one more fits once four have left, at 30 + 1000.
    expect(await limiter.consume('t', { limit: 2 })).to.include({ allowed: false, retryAfterMs: 930, remaining: 0 })
    now = 1_029
    expect((await limiter.consume('t', { limit: 2 })).allowed).to.equal(false)
    now = 1_030
    expect(await limiter.consume('t', { limit: 2 })).to.include({ allowed: true, remaining: 0 })
  })

  it('a limit map is read by its own entries: policies named like Object.prototype’s methods keep their limits', async () => {
    const names = ['constructor', 'toString', 'valueOf', 'hasOwnProperty']
    const limiter = createRateLimiter({
      policies: [
        ...names.map((name) => ({ name, limit: 3, window: 60_000 })),
        { name: 'api', limit: 10, window: 60_000 },
      ],
    })
    const decisions = []
    for (let i = 0; i < 4; i++) decisions.push(await limiter.consume('t', { limit: { api: 2 } }))
    expect(decisions.map((d) => [d.allowed, d.remaining])).to.deep.equal([
      [true, 1],
      [true, 0],
      [false, 0],
      [false, 0],
    ])
    // The map left them out: each keeps its own limit of 3, which now denies what api's 10 would admit.
    expect(await limiter.consume('t', { limit: { api: 10 } })).to.include({ allowed: true, remaining: 0 })
    expect(await limiter.consume('t', { limit: { api: 10 } })).to.include({ allowed: false, policy: 'constructor' })
    expect(await limiter.consume('u', { limit: { toString: 1 } })).to.include({ allowed: true, remaining: 0 })
    expect(await limiter.consume('u', { limit: { toString: 1 } })).to.include({ allowed: false, policy: 'toString' })
  })

  it('a Map as a call’s limit is refused with a coded error, not read as a map that names no limit', async () => {
    const limiter = createRateLimiter({ name: 'api', limit: 10, window: '1m' })
    const error = await optionErrorOfAsync(() => limiter.consume('t', { limit: new Map([['api', 1]]) as never }))
    expect(error.option).to.equal('limit')
    expect(error.message).to.include('a plain object from policy name (api) to limit')
    expect(limiter.stats().decisions).to.equal(0)
  })
})
