import { expect } from 'chai'
import { storeOf, withStore } from '../../../packages/core/src/limiter/limiter-stores.js'
import type { RateLimiter } from '../../../packages/core/src/limiter/limiter-types.js'
import { memoryStore } from '../../../packages/core/src/store/memory-store.js'

describe('limiter-stores', () => {
  it('records a limiter’s store and returns the limiter; any other object has none', () => {
    const store = memoryStore()
    const limiter = {} as RateLimiter
    expect(withStore(store, limiter)).to.equal(limiter)
    expect(storeOf(limiter)).to.equal(store)
    expect(storeOf({} as RateLimiter)).to.equal(undefined)
  })
})
