import { expect } from 'chai'
import type { Redis } from 'ioredis'
import { createScriptRunner, type LuaScript } from '../../../packages/core/src/store/script-runner.js'
import {
  bucketedReadOnlyScript,
  bucketedScript,
  slidingLogReadOnlyScript,
  slidingLogScript,
} from '../../../packages/core/src/store/scripts.generated.js'
import { type CostWindow, costWindowsCall, windowsCall } from '../../../packages/core/src/store/sliding-log-call.js'
import { withoutFastPath } from '../../support/general-path-script.js'
import { redisClient, uniquePrefix } from '../../support/redis.js'
import { withTestClock } from '../../support/test-clock-script.js'

// Each script's twin flagged no-writes (scripts.generated.ts): what the command line peeks with, so that it reads
// a read-only replica. Redis refuses any write such a script attempts: a peek that wrote would fail there.
describe('the no-writes twins of the Lua scripts, on a real Redis', () => {
  let redis: Redis
  let prefix: string
  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())
  beforeEach(() => {
    prefix = uniquePrefix()
  })

  it('are their script with the no-writes flag, and SCRIPT LOAD returns the sha1 the generator computed', async () => {
    for (const [script, twin] of [
      [slidingLogScript, slidingLogReadOnlyScript],
      [bucketedScript, bucketedReadOnlyScript],
    ] as const) {
      expect(twin.lua).to.equal(script.lua.replace(/^#!lua\n/, '#!lua flags=no-writes\n'))
      expect(await redis.script('LOAD', twin.lua), twin.name).to.equal(twin.sha1)
    }
  })

  it('sliding-log.lua: every kind of peek answers as the script does, byte for byte, on the same clock', async () => {
    const nowUs = 1_800_000_000_000_000
    const clock = (us: number) => [String(Math.floor(us / 1e6)), String(us % 1e6)]
    const run = (script: LuaScript, keys: string[], call: Buffer, us = nowUs) =>
      createScriptRunner(redis).runBuffer(withTestClock(script), keys, [call, ...clock(us)])
    const [log, held, slots, empty] = ['log', 'held', 'slots', 'empty'].map((k) => `${prefix}:{t}:${k}`) as [
      string,
      string,
      string,
      string,
    ]
    const window = { limit: 5, windowMs: 60_000 }
    // A log of 4 units over three times, a paused one, 2 slots held.
    for (const [cost, at] of [
      [1, 0],
      [2, 1_000_000],
      [1, 2_000_000],
    ] as const) {
      await run(slidingLogScript, [log], windowsCall('c', cost, [window]), nowUs - 3_000_000 + at)
    }
    await run(slidingLogScript, [held], windowsCall('c', 2, [window]), nowUs - 3_000_000)
    await run(slidingLogScript, [held], windowsCall('z', 30_000, [window]), nowUs - 3_000_000)
    const slotWindow: CostWindow = { limit: 3, windowMs: 10_000, cost: 1, slots: true }
    for (let i = 0; i < 2; i++) await run(slidingLogScript, [slots], costWindowsCall('consume', [slotWindow]))

    const peeks: [string[], Buffer][] = [
      [[log], windowsCall('p', 1, [window])],
      [[log], windowsCall('p', 2, [{ limit: 5, windowMs: 60_000 }])],
      [[log], windowsCall('p', 1, [{ limit: 4, windowMs: 60_000 }])],
      [[held], windowsCall('p', 1, [window])],
      [[empty], windowsCall('p', 1, [window])],
      [[slots], costWindowsCall('peek', [slotWindow])],
      [[slots], costWindowsCall('peek', [{ ...slotWindow, limit: 2 }])],
      [[log, held], windowsCall('p', 1, [window, window])],
      [[log, slots], costWindowsCall('peek', [{ ...window, cost: 2 }, slotWindow])],
    ]
    for (const [keys, call] of peeks) {
      const expected = await run(slidingLogScript, keys, call)
      expect(await run(slidingLogReadOnlyScript, keys, call), call.toString('hex')).to.deep.equal(expected)
      // The general code (the fast path off) writes nothing on a peek either.
      const general = await run(withoutFastPath(slidingLogReadOnlyScript), keys, call)
      expect(general, call.toString('hex')).to.deep.equal(expected)
    }
    // The flag is real: a consume through the twin is refused.
    const refused = await run(slidingLogReadOnlyScript, [empty], windowsCall('c', 1, [window])).catch((e) => e)
    expect(String(refused)).to.match(/Write commands are not allowed from read-only scripts/)
  })

  it('bucketed.lua: a peek leaves stale buckets and an ended hold to the next write, so the twin runs', async () => {
    const key = `${prefix}:{t}:b`
    const runner = createScriptRunner(redis)
    const args = (cost: number, mode: string) => [10, 60_000, 6, cost, mode, 0, 0]
    await runner.run(bucketedScript, [key], args(3, 'consume'))
    // A bucket long out of the window, and a hold that has ended: what a consume drops.
    await redis.hset(key, '1', '4', 'h', '1')
    const peek = (await runner.run(bucketedReadOnlyScript, [key], args(7, 'peek'))) as number[]
    expect(peek.slice(0, 3)).to.deep.equal([1, 7, 0])
    expect(await redis.hlen(key)).to.equal(3)
    expect(((await runner.run(bucketedReadOnlyScript, [key], args(8, 'peek'))) as number[]).slice(0, 2)).to.deep.equal([
      0, 7,
    ])
    await runner.run(bucketedScript, [key], args(1, 'consume'))
    expect(await redis.hlen(key)).to.equal(1)
  })
})
