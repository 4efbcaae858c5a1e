import { redisStore } from '@fleetlimit/core'
import { sleep } from '@fleetlimit/test-kit/sleep'
import { expect } from 'chai'
import type { Redis } from 'ioredis'
import { redisClient, uniquePrefix } from '../../support/redis.js'

describe('lua/bucketed.lua on a real Redis', () => {
  let redis: Redis
  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())

  it('keeps one key at a limit of 100 000 per window within a few kilobytes', async function () {
    this.timeout(10_000)
    const prefix = uniquePrefix()
    const store = redisStore(redis, { prefix })
    const windowMs = 600
    // Spread 100 000 admissions over the whole window, so that every bucket holds some.
    for (let i = 0; i < 60; i++) {
      await store.consume([{ key: 'k', limit: 100_000, windowMs, cost: 1_600, buckets: 60 }])
      await sleep(10)
    }
    const key = `${prefix}:k`
    const bytes = Number(await redis.memory('USAGE', key))
    expect(await redis.hlen(key)).to.be.within(30, 61)
    expect(bytes).to.be.below(8_192)
  })
})
