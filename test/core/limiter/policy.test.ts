import { createRateLimiter, definePolicy, memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'

describe('definePolicy', () => {
  it('freezes a resolved policy that builds a limiter when spread', async () => {
    const policy = definePolicy({ limit: 3, window: '1.5s', name: 'search' })
    expect(Object.isFrozen(policy)).to.equal(true)
    expect(policy).to.deep.equal({
      name: 'search',
      limit: 3,
      window: 1500,
      cost: 1,
      scope: 'route',
      algorithm: 'sliding-log',
      onStoreError: 'fail-closed',
      timeoutMs: 100,
      blockFor: 0,
      shadow: false,
    })
    const limiter = createRateLimiter({ store: memoryStore(), ...policy })
    expect(limiter.policy).to.deep.equal(policy)
    expect((await limiter.consume('a')).policy).to.equal('search')
  })

  it('derives a name from the limit and window when none is given', () => {
    expect(definePolicy({ limit: 100, window: '1m' }).name).to.equal('100-per-60000ms')
  })
})
