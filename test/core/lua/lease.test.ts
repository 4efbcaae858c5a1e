import { createRateLimiter, redisStore } from '@fleetlimit/core'
import { sleep } from '@fleetlimit/test-kit/sleep'
import { expect } from 'chai'
import type { Redis } from 'ioredis'
import { redisClient, uniquePrefix } from '../../support/redis.js'

// Through the limiter's local tier, which asks lease.lua for units and returns those it did not use.
describe('lua/lease.lua on a real Redis', () => {
  let redis: Redis
  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())

  it('admits from a lease locally, and returns unused units: ZCARD shrinks by the units returned', async () => {
    const prefix = uniquePrefix()
    const limiter = createRateLimiter({
      store: redisStore(redis, { prefix }),
      name: 'api',
      limit: 100,
      window: '10s',
      local: { lease: 10, leaseTtlMs: 50 },
    })
    const key = `${prefix}:api~sl1-10000:{t}`
    const sources = []
    for (let i = 0; i < 3; i++) sources.push((await limiter.consume('t')).source)
    expect(sources).to.deep.equal(['store', 'local', 'local'])
    expect(await redis.zcard(key), 'the whole lease is in the window').to.equal(10)
    const [, score] = await redis.zrange(key, 0, 0, 'WITHSCORES')
    const [, nowMs] = await redis.time()
    expect(Number(score) / 1000, 'scored at the lease’s expiry').to.be.above(Number(nowMs) / 1000)

    // The lease expires 50 ms after it was asked for; wait on the counter that says it was returned.
    for (let i = 0; i < 200 && limiter.stats().returnedUnits < 7; i++) await sleep(10)
    expect(limiter.stats()).to.include({ leasedUnits: 10, leaseUsedUnits: 3, expiredUnits: 7, returnedUnits: 7 })
    expect(await redis.zcard(key)).to.equal(3)
  })
})
