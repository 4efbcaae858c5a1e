import { createRateLimiter, type RateLimiter, redisStore } from '@fleetlimit/core'
import { expect } from 'chai'
import { serverPerTest } from '../../support/faults.js'
import { commandCalls } from '../../support/redis.js'

const quiet = { warn() {}, info() {} }

// One ioredis connection runs its commands in order: the first call of a script sends its text, the rest its sha1.
describe('createScriptRunner on one ioredis connection', () => {
  const redis = serverPerTest()

  const limiter = () =>
    createRateLimiter({
      store: redisStore(redis.client),
      limit: 1_000_000,
      window: '1m',
      local: false,
      timeoutMs: 10_000,
      logger: quiet,
    })
  /** `count` calls made at once: the ones the store did not decide. */
  const burst = async (tested: RateLimiter, count: number) => {
    const decisions = await Promise.all(Array.from({ length: count }, (_, i) => tested.consume(`t-${i % 50}`)))
    return decisions.filter((d) => d.source !== 'store')
  }
  const calls = async (command: string) => (await commandCalls(redis.client))(command)

  it('a cold burst of 2,000 calls sends the script text once: one EVAL, then EVALSHA', async () => {
    const tested = limiter()
    expect(await burst(tested, 2_000)).to.deep.equal([])
    expect(await calls('eval'), 'EVALs').to.equal(1)
    expect(await calls('evalsha'), 'EVALSHAs').to.be.above(0)
    expect(tested.stats()).to.include({ storeErrors: 0, allowed: 2_000 })
  })

  it('after SCRIPT FLUSH, a burst sends one EVAL more, and no call fails', async () => {
    const tested = limiter()
    expect(await burst(tested, 300)).to.deep.equal([])
    await redis.client.script('FLUSH')
    expect(await burst(tested, 300)).to.deep.equal([])
    expect(await calls('eval')).to.equal(2)
    expect(tested.stats()).to.include({ storeErrors: 0, allowed: 600 })
  })
})
