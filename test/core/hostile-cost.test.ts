import { createRateLimiter, definePolicy, isFleetlimitError, type OptionError, redisStore } from '@fleetlimit/core'
import { expect } from 'chai'
import type { Redis } from 'ioredis'
import { redisClient, uniquePrefix } from '../support/redis.js'

const quiet = { warn() {} }

/** The error a call throws (or undefined), so that its code and message can be read. */
async function errorOf(call: () => unknown): Promise<OptionError | undefined> {
  try {
    await call()
  } catch (error) {
    return error as OptionError
  }
  return undefined
}

describe('no single call can freeze Redis: the work of one decision is bounded', () => {
  let redis: Redis
  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())

  /** A limit of 1e9 bytes per hour, on its own prefix: the kind of policy that takes a cost from a request. */
  const bytesPerHour = (prefix: string, algorithm: 'sliding-log' | 'bucketed') =>
    createRateLimiter({
      store: redisStore(redis, { prefix }),
      name: 'bytes',
      limit: 1e9,
      window: '1h',
      algorithm,
      logger: quiet,
    })

  it('a sliding-log cost above 1,000 units is refused with a coded error that names the way out; nothing is recorded', async () => {
    const prefix = uniquePrefix()
    const limiter = bytesPerHour(prefix, 'sliding-log')
    const error = await errorOf(() => limiter.consume('t', { cost: 3_500_000 }))
    expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION')).to.equal(true)
    expect(error?.option).to.equal('cost')
    expect(error?.message).to.include('at most 1000').and.include("algorithm 'bucketed'")
    expect(await redis.exists(`${prefix}:bytes~sl1-3600000:{t}`)).to.equal(0)
    expect((await limiter.consume('t', { cost: 1_000 })).remaining).to.equal(1e9 - 1_000)
    expect(await redis.zcard(`${prefix}:bytes~sl1-3600000:{t}`)).to.equal(1_000)
  })

  it('the bucketed algorithm takes any cost up to the limit, in one counter', async () => {
    const prefix = uniquePrefix()
    const limiter = bytesPerHour(prefix, 'bucketed')
    expect((await limiter.consume('t', { cost: 3_500_000 })).remaining).to.equal(1e9 - 3_500_000)
    expect(await redis.hlen(`${prefix}:bytes~bw1-3600000-60:{t}`)).to.equal(1)
  })

  it('with several policies the 1,000 units are shared among them; a policy cost is checked at construction', async () => {
    const a = definePolicy({ name: 'a', limit: 1e6, window: '1m' })
    const b = definePolicy({ name: 'b', limit: 1e6, window: '1h' })
    const limiter = createRateLimiter({ policies: [a, b], logger: quiet })
    expect((await limiter.consume('t', { cost: 500 })).allowed).to.equal(true)
    expect((await errorOf(() => limiter.consume('t', { cost: 501 })))?.message).to.include('at most 500')
    expect((await errorOf(() => definePolicy({ limit: 1e6, window: '1m', cost: 5_000 })))?.option).to.equal('cost')
  })

  it('a lease is at most 1,000 units, whatever the limit', async () => {
    const error = await errorOf(() => createRateLimiter({ limit: 1e6, window: '1m', local: { lease: 150_000 } }))
    expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION')).to.equal(true)
    expect(error?.message).to.include('local.lease').and.include('from 2 to 1000')
    expect(createRateLimiter({ limit: 1e6, window: '1m', local: { lease: 1_000 } }).policy.limit).to.equal(1e6)
  })
})
