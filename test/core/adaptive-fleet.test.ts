import { createRateLimiter, isFleetlimitError, type RateLimiter, redisStore } from '@fleetlimit/core'
import { expect } from 'chai'
import type { Redis } from 'ioredis'
import { limitedFetch } from '../../packages/core/src/outbound/limited-fetch.js'
import { quotaHeaders, startStub } from '../support/quota-stub.js'
import { redisClient, uniquePrefix } from '../support/redis.js'

describe('limitedFetch adapt: a fleet on one Redis', () => {
  let redis: Redis
  let stub: Awaited<ReturnType<typeof startStub>> | undefined
  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())
  afterEach(async () => {
    await stub?.close()
    stub = undefined
  })

  /**
   * Two limiters, each on its own store of one prefix: two processes of a fleet. A burst's store calls may queue
   * behind each other on a busy machine: what is tested is the upstream's count, not the store's deadline.
   */
  function fleet(limit: number, maxQueue = 1_000) {
    const prefix = uniquePrefix()
    return [0, 1].map(() =>
      createRateLimiter({
        store: redisStore(redis, { prefix }),
        limit,
        window: '1s',
        name: 'up',
        maxQueue,
        timeoutMs: 5_000,
      }),
    ) as [RateLimiter, RateLimiter]
  }

  it("learns from one process's answers, and the other holds to it", async () => {
    stub = await startStub(() => ({ status: 200, headers: quotaHeaders(4, 3) }))
    const [one, two] = fleet(60)
    const response = await limitedFetch(one, { key: 'stub' })(stub.url)
    await response.text()
    expect(await two.learned('stub')).to.deep.equal({ limit: 4, source: 'headers' })
    expect((await two.peek('stub')).limit).to.equal(4)
  })

  it('a burst of 10,000 calls from two processes never exceeds the learned limit at the upstream', async function () {
    this.timeout(60_000)
    const quota = 20
    // The upstream states 20 per second and counts arrivals in any second.
    stub = await startStub(() => {
      const arrivals = (stub as { arrivals: number[] }).arrivals
      const at = arrivals.at(-1) as number
      const used = arrivals.filter((t) => t > at - 1_000).length
      return used > quota
        ? { status: 429, headers: { 'retry-after': '1' } }
        : { status: 200, headers: quotaHeaders(quota, quota - used) }
    })
    const [one, two] = fleet(1_000, 10_000)
    // The first answer teaches the quota.
    await (await limitedFetch(one, { key: 'stub' })(stub.url)).text()
    expect(await two.learned('stub')).to.deep.equal({ limit: quota, source: 'headers' })
    const fetches = [one, two].map((limiter) => limitedFetch(limiter, { key: 'stub', maxWaitMs: '2500ms' }))
    const outcomes = await Promise.all(
      Array.from({ length: 10_000 }, (_, i) =>
        (fetches[i % 2] as ReturnType<typeof limitedFetch>)(stub?.url as string).then(
          async (response) => {
            await response.text()
            return response.status
          },
          (error: unknown) => (isFleetlimitError(error, 'ERR_FLEETLIMIT_TIMEOUT') ? 'timeout' : error),
        ),
      ),
    )
    expect(outcomes.filter((o) => o !== 200 && o !== 'timeout')).to.deep.equal([])
    const { arrivals } = stub
    let most = 0
    for (let i = 0, j = 0; i < arrivals.length; i++) {
      while ((arrivals[j] as number) <= (arrivals[i] as number) - 1_000) j++
      most = Math.max(most, i - j + 1)
    }
    expect(most).to.be.at.most(quota)
    expect(arrivals.length).to.be.at.least(quota + 1)
  })
})
