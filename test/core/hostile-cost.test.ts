import { createRateLimiter, definePolicy, isFleetlimitError, type OptionError, redisStore } from '@fleetlimit/core'
import { logUnits } from '@fleetlimit/test-kit/log-units'
import { sleep } from '@fleetlimit/test-kit/sleep'
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

describe('no single call can freeze Redis: the work of one decision does not grow with its cost', () => {
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

  it('a sliding-log cost of 3,500,000 is one entry of the log: exact remaining and wait, whatever the cost', async () => {
    const prefix = uniquePrefix()
    const limiter = bytesPerHour(prefix, 'sliding-log')
    const key = `${prefix}:bytes~sl3-3600000:{t}`
    expect((await limiter.consume('t', { cost: 3_500_000 })).remaining).to.equal(1e9 - 3_500_000)
    expect((await limiter.consume('t', { cost: 996_000_000 })).remaining).to.equal(500_000)
    expect(await logUnits(redis, key)).to.equal(999_500_000)
    // Two entries of 9 bytes and the 85-byte header, where a sorted set held one member per unit.
    expect(await redis.strlen(key)).to.equal(2 * 9 + 85)
    const denied = await limiter.consume('t', { cost: 600_000 })
    expect(denied).to.include({ allowed: false, remaining: 500_000 })
    expect(denied.retryAfterMs, 'the first call must leave the window').to.be.within(3_599_000, 3_600_000)
  })

  it('a cost above the limit is refused with a coded error that names the range; nothing is recorded', async () => {
    const prefix = uniquePrefix()
    const limiter = bytesPerHour(prefix, 'sliding-log')
    const error = await errorOf(() => limiter.consume('t', { cost: 2e9 }))
    expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION')).to.equal(true)
    expect(error?.option).to.equal('cost')
    expect(error?.message).to.include('1000000000')
    expect(await redis.exists(`${prefix}:bytes~sl3-3600000:{t}`)).to.equal(0)
  })

  it('the bucketed algorithm takes any cost up to the limit, in one counter', async () => {
    const prefix = uniquePrefix()
    const limiter = bytesPerHour(prefix, 'bucketed')
    expect((await limiter.consume('t', { cost: 3_500_000 })).remaining).to.equal(1e9 - 3_500_000)
    expect(await redis.hlen(`${prefix}:bytes~bw1-3600000-60:{t}`)).to.equal(1)
  })

  it('with several policies a large cost is one entry in each window, in one call', async () => {
    const prefix = uniquePrefix()
    const a = definePolicy({ name: 'a', limit: 1e9, window: '1m' })
    const b = definePolicy({ name: 'b', limit: 2e6, window: '1h' })
    const limiter = createRateLimiter({ store: redisStore(redis, { prefix }), policies: [a, b], logger: quiet })
    expect((await limiter.consume('t', { cost: 1_500_000 })).allowed).to.equal(true)
    const denied = await limiter.consume('t', { cost: 1_000_000 })
    expect(denied).to.include({ allowed: false, policy: 'b' })
    expect(await logUnits(redis, `${prefix}:a~sl3-60000:{t}`)).to.equal(1_500_000)
    expect(await redis.strlen(`${prefix}:b~sl3-3600000:{t}`)).to.equal(9 + 85)
    expect((await errorOf(() => limiter.consume('t', { cost: 2_000_001 })))?.option).to.equal('cost')
  })

  it('a lease of 150,000 units is one entry too, and its unused units return', async () => {
    const prefix = uniquePrefix()
    const limiter = createRateLimiter({
      store: redisStore(redis, { prefix }),
      limit: 1.5e6,
      window: '1m',
      local: { lease: 150_000, leaseTtlMs: 20 },
    })
    expect((await limiter.consume('t')).source).to.equal('store')
    const key = `${prefix}:1500000-per-60000ms~sl3-60000:{t}`
    expect(await logUnits(redis, key)).to.equal(150_000)
    expect(await redis.strlen(key)).to.equal(9 + 85)
    for (let i = 0; i < 200 && limiter.stats().returnedUnits === 0; i++) await sleep(10)
    expect(await logUnits(redis, key), 'all but the unit used').to.equal(1)
  })
})
