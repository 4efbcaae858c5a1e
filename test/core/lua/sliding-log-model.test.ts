import { expect } from 'chai'
import fc from 'fast-check'
import type { Redis } from 'ioredis'
import { createScriptRunner, type LuaScript } from '../../../packages/core/src/store/script-runner.js'
import { slidingLogScript } from '../../../packages/core/src/store/scripts.generated.js'
import { redisClient, uniquePrefix } from '../../support/redis.js'

const TIME_CALL = "local time = redis.call('TIME')"
const EXPIRE_CALL = "redis.call('PEXPIRE', key, reset)"

/**
 * The script with the server's clock replaced by the test's (two more arguments: seconds and microseconds), a
 * test-only copy made here and never shipped. Its PEXPIRE is left out: a key must not expire on the real clock
 * while the test's clock stands still (expiry has its own tests).
 */
function withTestClock(script: LuaScript): LuaScript {
  if (!script.lua.includes(TIME_CALL) || !script.lua.includes(EXPIRE_CALL)) {
    throw new Error(`${script.name}.lua no longer reads the clock as this test expects: update the test`)
  }
  const lua = script.lua
    .replace(TIME_CALL, 'local time = { ARGV[#ARGV - 1], ARGV[#ARGV] }')
    .replaceAll(EXPIRE_CALL, '-- PEXPIRE left out under the test clock')
  return { name: `${script.name}-test-clock`, lua, sha1: '0'.repeat(40) }
}

interface Admission {
  readonly atUs: number
  readonly cost: number
}

/** The exact answer for `cost` units at `nowUs`, by the definition: every unit inside (now - window, now]. */
function reference(admissions: readonly Admission[], nowUs: number, limit: number, windowUs: number, cost: number) {
  const live = admissions.filter((a) => a.atUs > nowUs - windowUs)
  const used = live.reduce((sum, a) => sum + a.cost, 0)
  const msUntilGone = (atUs: number) => Math.ceil((atUs + windowUs - nowUs) / 1000)
  const newest = live.at(-1)
  if (used + cost <= limit) {
    return { allowed: 1, used, retryAfterMs: 0, resetMs: newest ? msUntilGone(newest.atUs) : 0 }
  }
  // The (used + cost - limit)-th oldest unit must leave first.
  let toFree = used + cost - limit
  let blocking = live[0] as Admission
  for (const admission of live) {
    blocking = admission
    toFree -= admission.cost
    if (toFree <= 0) break
  }
  return {
    allowed: 0,
    used,
    retryAfterMs: msUntilGone(blocking.atUs),
    resetMs: msUntilGone((newest as Admission).atUs),
  }
}

describe('lua/sliding-log.lua against a reference model (fast-check, the test’s clock)', () => {
  let redis: Redis
  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())

  it('every reply field is exact: random limits, windows, costs, peeks and calls in the same microsecond', async function () {
    this.timeout(120_000)
    const script = withTestClock(slidingLogScript)
    const runner = createScriptRunner(redis)
    const step = fc.record({
      // No time at all (a call in the same microsecond); up to a window and a half; or to 1 µs before, at or after
      // the moment the oldest live unit leaves the window, where an off-by-one would show.
      time: fc.constantFrom('same', 'advance', 'boundary'),
      advanceUs: fc.integer({ min: 1, max: 1_500_000 }),
      boundaryUs: fc.integer({ min: -1, max: 1 }),
      cost: fc.integer({ min: 1, max: 1_000 }),
      peek: fc.boolean(),
    })
    let calls = 0
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 1_000 }),
        fc.integer({ min: 1, max: 1_000 }),
        fc.array(step, { minLength: 1, maxLength: 300, size: 'max' }),
        async (limit, windowMs, steps) => {
          const key = `${uniquePrefix()}:model`
          const windowUs = windowMs * 1000
          const admissions: Admission[] = []
          let nowUs = 1_700_000_000_000_000
          for (const [i, { time, advanceUs, boundaryUs, cost: rawCost, peek }] of steps.entries()) {
            // Drawn up to 1.5 s; scaled to the window, so that units both stay and leave.
            if (time === 'advance') nowUs += Math.floor((advanceUs * windowMs) / 1_000)
            if (time === 'boundary') {
              const oldest = admissions.find((a) => a.atUs > nowUs - windowUs)
              if (oldest) nowUs = Math.max(nowUs, oldest.atUs + windowUs + boundaryUs)
            }
            const cost = Math.min(rawCost, limit)
            const args = [limit, windowMs, cost, `m${i}`, peek ? 'peek' : 'consume', 0]
            const seconds = Math.floor(nowUs / 1_000_000)
            const reply = (await runner.run(script, [key], [...args, seconds, nowUs - seconds * 1_000_000])) as number[]
            calls++
            const expected = reference(admissions, nowUs, limit, windowUs, cost)
            const recorded = expected.allowed === 1 && !peek
            const remaining = Math.max(0, limit - expected.used - (recorded ? cost : 0))
            const resetMs = recorded ? windowMs : expected.resetMs
            expect(reply, `call ${i}`).to.deep.equal([
              expected.allowed,
              remaining,
              expected.retryAfterMs,
              resetMs,
              nowUs,
            ])
            if (recorded) admissions.push({ atUs: nowUs, cost })
          }
          await redis.del(key)
        },
      ),
      { numRuns: 60 },
    )
    expect(calls, 'decisions checked against the model').to.be.greaterThan(3_000)
  })
})
