import { createRateLimiter, memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'
import { describePlans } from '../../support/plans.js'
import { closeStoreClients, storeKinds } from '../../support/stores.js'

describe('per-call limits', () => {
  after(closeStoreClients)
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
})
