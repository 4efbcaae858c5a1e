import { expect } from 'chai'
import type { Redis } from 'ioredis'
import { createScriptRunner } from '../../../packages/core/src/store/script-runner.js'
import { slidingLogMultiScript } from '../../../packages/core/src/store/scripts.generated.js'
import { redisClient, uniquePrefix } from '../../support/redis.js'

describe('lua/sliding-log-multi.lua on a real Redis', () => {
  let redis: Redis
  let key: string
  let members = 0
  const runner = () => createScriptRunner(redis)

  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())
  beforeEach(() => {
    key = `${uniquePrefix()}:k`
  })

  it('the multi-key script records in every window or in none, with each window’s exact wait', async () => {
    const tag = `${key}:{t}`
    const keys = [`${tag}:global`, `${tag}:route`]
    const multi = async (cost: number) =>
      (await runner().run(slidingLogMultiScript, keys, [
        cost,
        `m${members++}`,
        'consume',
        0,
        5,
        10_000,
        2,
        3_000,
      ])) as number[]
    expect((await multi(1))[0]).to.equal(1)
    const admitted = await multi(1)
    expect(admitted.slice(0, 1).concat(admitted.slice(2))).to.deep.equal([1, 1, 3, 0, 10_000, 1, 0, 0, 3_000])
    const denied = await multi(1)
    const nowUs = denied[1] as number
    const routeScores = (await redis.zrange(keys[1] as string, 0, -1, 'WITHSCORES'))
      .filter((_, i) => i % 2 === 1)
      .map(Number)
    expect(denied[0]).to.equal(0)
    expect(denied.slice(2, 5)).to.deep.equal([1, 3, 0])
    expect(denied.slice(6, 8)).to.deep.equal([0, 0])
    expect(denied[8]).to.equal(Math.ceil(((routeScores[0] as number) + 3_000_000 - nowUs) / 1000))
    expect(await redis.zcard(keys[0] as string), 'the denial added nothing to the window that had room').to.equal(2)
    expect(await redis.pttl(keys[1] as string)).to.be.within(1, 3_000)
  })
})
