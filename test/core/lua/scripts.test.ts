import { readFileSync } from 'node:fs'
import { expect } from 'chai'
import type { Redis } from 'ioredis'
import { createScriptRunner } from '../../../packages/core/src/store/script-runner.js'
import { bucketedScript, noteScript, slidingLogScript } from '../../../packages/core/src/store/scripts.generated.js'
import { leanLua } from '../../../scripts/lean-lua.mjs'
import { redisClient, uniquePrefix } from '../../support/redis.js'
import { callSlidingLog, textCall } from '../../support/sliding-log-call.js'

// What every script shares: its sha1, and the deadline after which it records nothing.
describe('every Lua script on a real Redis', () => {
  let redis: Redis
  let key: string
  const runner = () => createScriptRunner(redis)

  /** One call of sliding-log.lua on the test's key. */
  const call = (limit: number, windowMs: number, cost = 1, mode: 'consume' | 'peek' = 'consume', deadlineUs = 0) =>
    callSlidingLog(redis, key, { limit, windowMs, cost, mode, deadlineUs })

  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())
  beforeEach(() => {
    key = `${uniquePrefix()}:k`
  })

  it('SCRIPT LOAD returns the sha1 the generator computed', async () => {
    for (const script of [slidingLogScript, bucketedScript, noteScript]) {
      expect(await redis.script('LOAD', script.lua), script.name).to.equal(script.sha1)
    }
  })

  it('sends each script without comments or indentation, its #!lua line first', () => {
    for (const script of [slidingLogScript, bucketedScript, noteScript]) {
      const [first, ...rest] = script.lua.split('\n')
      expect(first, script.name).to.equal('#!lua')
      expect(
        rest.filter((line) => /^\s|^--/.test(line)),
        script.name,
      ).to.deep.equal([])
      expect(script.lua, script.name).to.equal(leanLua(readFileSync(`lua/${script.name}.lua`, 'utf8')))
    }
  })

  it('records nothing for a call whose deadline passed before it ran, in every recording script', async () => {
    const { nowUs } = await call(10, 10_000, 1, 'peek')
    const past = nowUs - 1
    expect(await call(10, 10_000, 3, 'consume', past)).to.deep.include({ allowed: -1, remaining: 0 })
    expect(await redis.exists(key)).to.equal(0)
    const [multi, lease, bucketed] = await Promise.all([
      runner().runBuffer(
        slidingLogScript,
        [`${key}:{t}:a`, `${key}:{t}:b`],
        [textCall(['c', 1, past, 5, 1_000, '0', 5, 2_000, '0'])],
      ),
      runner().runBuffer(slidingLogScript, [key], [textCall(['l', 10, past, 10, 10_000, '0', 1, 1, 100])]),
      runner().run(bucketedScript, [`${key}:b`], [10, 10_000, 10, 1, 'consume', past, 0]),
    ])
    expect(multi.readInt8(0)).to.equal(-1)
    expect(multi, 'nothing follows the status and the time').to.have.length(13)
    expect(lease.readInt8(0)).to.equal(-1)
    expect((bucketed as number[])[0]).to.equal(-1)
    expect(await redis.exists(key, `${key}:{t}:a`, `${key}:{t}:b`, `${key}:b`)).to.equal(0)
    // A deadline still ahead changes nothing.
    expect(await call(10, 10_000, 3, 'consume', nowUs + 60_000_000)).to.include({ allowed: 1, remaining: 7 })
  })
})
