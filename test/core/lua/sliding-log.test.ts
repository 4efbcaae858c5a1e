import { expectAdmittedExactlyAt } from '@fleetlimit/test-kit/exact-wait'
import { expect } from 'chai'
import type { Redis } from 'ioredis'
import { slidingLogScript } from '../../../packages/core/src/store/scripts.generated.js'
import { redisClient, uniquePrefix } from '../../support/redis.js'
import { callSlidingLog } from '../../support/sliding-log-call.js'

describe('lua/sliding-log.lua on a real Redis', () => {
  let redis: Redis
  let key: string

  /** One call of sliding-log.lua on the test's key. */
  const call = (limit: number, windowMs: number, cost = 1, mode: 'consume' | 'peek' = 'consume', deadlineUs = 0) =>
    callSlidingLog(redis, key, { limit, windowMs, cost, mode, deadlineUs })

  /** The scores of the key's entries, in ascending order, in µs. */
  async function scores(): Promise<number[]> {
    const flat = await redis.zrange(key, 0, -1, 'WITHSCORES')
    return flat.filter((_, i) => i % 2 === 1).map(Number)
  }

  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())
  beforeEach(() => {
    key = `${uniquePrefix()}:k`
  })

  it('admits up to the limit, then denies with the exact wait', async () => {
    for (let i = 0; i < 3; i++) {
      const reply = await call(3, 10_000)
      expect(reply).to.include({ allowed: 1, remaining: 2 - i, retryAfterMs: 0, resetMs: 10_000 })
    }
    const denied = await call(3, 10_000)
    expect(denied.allowed).to.equal(0)
    expect(denied.remaining).to.equal(0)
    const [oldest, , newest] = (await scores()) as [number, number, number]
    expect(denied.retryAfterMs).to.equal(Math.ceil((oldest + 10_000_000 - denied.nowUs) / 1000))
    expect(denied.resetMs).to.equal(Math.ceil((newest + 10_000_000 - denied.nowUs) / 1000))
    expect(denied.retryAfterMs).to.be.within(1, 10_000)
  })

  it('retrying at retryAfterMs succeeds and 5 ms before it fails', async function () {
    this.timeout(10_000)
    await call(1, 300)
    const denied = await call(1, 300)
    const timed = async () => {
      const reply = await call(1, 300)
      return { allowed: reply.allowed === 1, retryAfterMs: reply.retryAfterMs, now: reply.nowUs / 1000 }
    }
    const deniedAt = denied.nowUs / 1000
    await expectAdmittedExactlyAt(deniedAt + denied.retryAfterMs, deniedAt, timed)
  })

  it('a cost above what is left waits for exactly enough entries to leave', async () => {
    await call(5, 10_000, 2)
    await call(5, 10_000, 2)
    const fits = await call(5, 10_000, 1)
    expect(fits).to.include({ allowed: 1, remaining: 0 })
    const denied = await call(5, 10_000, 3)
    expect(denied).to.include({ allowed: 0, remaining: 0 })
    // Three units must leave: the third oldest is the second unit of the first call.
    const sorted = await scores()
    expect(sorted).to.have.length(5)
    expect(denied.retryAfterMs).to.equal(Math.ceil(((sorted[2] as number) + 10_000_000 - denied.nowUs) / 1000))
    expect(await redis.zcard(key), 'a denial adds nothing').to.equal(5)
  })

  it('counts a thousand concurrent calls in the same millisecond (unique members)', async () => {
    const replies = await Promise.all(Array.from({ length: 1000 }, () => call(2000, 60_000)))
    expect(replies.every((r) => r.allowed === 1)).to.equal(true)
    expect(await redis.zcard(key)).to.equal(1000)
    const remaining = replies.map((r) => r.remaining).sort((a, b) => a - b)
    expect(remaining[0]).to.equal(1000)
    expect(new Set(remaining).size).to.equal(1000)
  })

  it('gives the key a TTL no longer than the window', async () => {
    await call(5, 2_000)
    const ttl = await redis.pttl(key)
    expect(ttl).to.be.within(1, 2_000)
  })

  it('records nothing on denial and nothing on peek', async () => {
    await call(1, 10_000)
    const before = await redis.zrange(key, 0, -1, 'WITHSCORES')
    await call(1, 10_000)
    const peeked = await call(1, 10_000, 1, 'peek')
    expect(peeked.allowed).to.equal(0)
    expect(await redis.zrange(key, 0, -1, 'WITHSCORES')).to.deep.equal(before)
    await redis.del(key)
    expect(await call(1, 10_000, 1, 'peek')).to.include({ allowed: 1, remaining: 1, resetMs: 0 })
    expect(await redis.exists(key)).to.equal(0)
  })

  it('admits a cost larger than one Lua unpack can take', async () => {
    const reply = await call(20_000, 60_000, 12_345)
    expect(reply).to.include({ allowed: 1, remaining: 7_655 })
    expect(await redis.zcard(key)).to.equal(12_345)
  })

  it('after SCRIPT FLUSH the next call succeeds by EVAL, with no error', async () => {
    await call(5, 10_000)
    await redis.script('FLUSH')
    const [loaded] = (await redis.script('EXISTS', slidingLogScript.sha1)) as [number]
    expect(loaded).to.equal(0)
    expect(await call(5, 10_000)).to.include({ allowed: 1, remaining: 3 })
    const [reloaded] = (await redis.script('EXISTS', slidingLogScript.sha1)) as [number]
    expect(reloaded, 'EVAL cached the script again').to.equal(1)
  })
})
