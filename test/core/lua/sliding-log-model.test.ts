import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { expect } from 'chai'
import fc from 'fast-check'
import { Redis } from 'ioredis'
import { createScriptRunner, type LuaScript } from '../../../packages/core/src/store/script-runner.js'
import { slidingLogScript } from '../../../packages/core/src/store/scripts.generated.js'
import { readSlidingLog } from '../../../packages/core/src/store/sliding-log-call.js'
import { withoutFastPath } from '../../support/general-path-script.js'
import { commandCalls, redisClient, uniquePrefix } from '../../support/redis.js'
import { textCall } from '../../support/sliding-log-call.js'
import {
  compareWithModel,
  type ModelStep,
  type ModelSubject,
  modelPair,
  modelSteps,
  modelWindows,
} from '../../support/sliding-log-model.js'
import { withTestClock } from '../../support/test-clock-script.js'

describe('lua/sliding-log.lua against a reference model (fast-check, the test’s clock, fast path on and off)', () => {
  let redis: Redis
  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())

  /**
   * The script on the test's clock, as a model subject (on the shared server, or on the client given). Each call
   * also runs with the fast path off (every call decided by the general code) on twin keys: the two replies, and
   * the bytes each leaves stored, must be equal, so the model checks both paths at once (unless `mirror` is false).
   * `script`: the script as sent, on the test's clock, unless a test gives another.
   */
  function scriptSubject(
    client: Redis = redis,
    mirror = true,
    script: LuaScript = withTestClock(slidingLogScript),
  ): ModelSubject {
    const general = withTestClock(withoutFastPath(slidingLogScript))
    const runner = createScriptRunner(client)
    const twin = (key: string) => `${key}:general`
    let clock: string[] = []
    const run = async (keys: string[], args: (string | number)[], windows: number) => {
      const call = [textCall(args), ...clock]
      const fast = await runner.runBuffer(script, keys, call)
      if (!mirror) return readSlidingLog(fast, windows)
      const slow = await runner.runBuffer(general, keys.map(twin), call)
      const what = `${args.join(' ')}, fast path off`
      // Decoded first, so that a difference names its field; then every byte.
      const [off, on] = [readSlidingLog(slow, windows), readSlidingLog(fast, windows)]
      expect(off, `reply of ${what}: ${JSON.stringify(off)}, fast path on: ${JSON.stringify(on)}`).to.deep.equal(on)
      expect(slow.toString('hex'), `reply bytes of ${what}`).to.equal(fast.toString('hex'))
      for (const key of keys) {
        const [stored, storedOff] = await Promise.all([client.getBuffer(key), client.getBuffer(twin(key))])
        expect(storedOff?.toString('hex'), `bytes of ${key} after ${what}`).to.equal(stored?.toString('hex'))
      }
      return readSlidingLog(fast, windows)
    }
    return {
      setNow(nowUs) {
        const seconds = Math.floor(nowUs / 1_000_000)
        clock = [String(seconds), String(nowUs - seconds * 1_000_000)]
      },
      async decide(windows, cost, peek) {
        const args: (string | number)[] = [peek ? 'p' : 'c', cost, 0]
        for (const w of windows) args.push(w.limit, w.windowMs, '0')
        const reply = await run(
          windows.map((w) => w.key),
          args,
          windows.length,
        )
        return reply.windows.map(({ allowed, remaining, retryAfterMs, resetMs }) => ({
          allowed,
          remaining,
          retryAfterMs,
          resetMs,
        }))
      },
      async lease(key, limit, windowMs, want, ttlMs) {
        const reply = await run([key], ['l', want, 0, limit, windowMs, '0', 1, 1, ttlMs], 1)
        const { allowed, remaining, retryAfterMs, resetMs, recordedUs } = reply.windows[0] as NonNullable<
          (typeof reply.windows)[0]
        >
        return { granted: reply.units, scoreUs: recordedUs, window: { allowed, remaining, retryAfterMs, resetMs } }
      },
      async release(key, windowMs, atUs, units) {
        return (await run([key], ['r', units, 0, atUs, windowMs], 0)).units
      },
    }
  }

  it('every reply field is exact: consume, peek, two windows at once, leases, releases, same-microsecond calls, exits ±1 µs', async function () {
    this.timeout(180_000)
    const subject = scriptSubject()
    let compared = 0
    await fc.assert(
      fc.asyncProperty(modelPair(), modelWindows(), modelSteps(300), async (limits, windowsMs, steps) => {
        const tag = `{${uniquePrefix()}}`
        const keys = [`${tag}:a`, `${tag}:b`] as const
        compared += await compareWithModel(subject, keys, limits, windowsMs, steps, 1, (actual, expected, what) =>
          expect(actual, what).to.deep.equal(expected),
        )
        await redis.del(...keys, ...keys.map((key) => `${key}:general`))
      }),
      { numRuns: 60 },
    )
    expect(compared, 'decisions checked against the model').to.be.greaterThan(5_000)
  })

  it('a fast path 1 µs off the general code in its denial wait fails the comparison with the fast path off', async () => {
    // The fast path's denial wait, made 1 µs later; the general code's copy (answer(), after it) is left as it is.
    const clocked = withTestClock(slidingLogScript)
    const from = 'ceil((at + window - rel) / 1000)'
    const at = clocked.lua.indexOf(from)
    expect(clocked.lua.indexOf(from, at + 1), 'the general code’s copy, after the fast path’s').to.be.greaterThan(at)
    const lua = `${clocked.lua.slice(0, at)}ceil((at + 1 + window - rel) / 1000)${clocked.lua.slice(at + from.length)}`
    const broken = { ...clocked, name: 'broken', lua }
    const check = (actual: unknown, expected: unknown, what: string) => expect(actual, what).to.deep.equal(expected)
    const schedules = {
      // The hot key's denial: a limit of 1, and a second call in the same microsecond.
      'hot key': { limit: 1, steps: [consumeStep('same', 0), consumeStep('same', 0)] },
      // The denial from the cached entries: a limit of 2, two calls 1 µs apart, then a cost of 2 (the first entry
      // alone does not make room for it).
      'cached entries': {
        limit: 2,
        steps: [consumeStep('same', 0), consumeStep('advance', 1), { ...consumeStep('same', 0), cost: 2 }],
      },
    }
    for (const [name, { limit, steps }] of Object.entries(schedules)) {
      const keys = () => {
        const tag = `{${uniquePrefix()}}`
        return [`${tag}:a`, `${tag}:b`] as const
      }
      const run = (subject: ModelSubject) => compareWithModel(subject, keys(), [limit, limit], [1, 1], steps, 1, check)
      expect(await run(scriptSubject()), `${name}: the script as sent`).to.equal(steps.length)
      const failure = await run(scriptSubject(redis, true, broken)).catch((error: unknown) => error)
      expect(failure, name)
        .to.be.instanceOf(Error)
        .with.property('message')
        .match(/fast path off: .*"retryAfterMs":1,.*, fast path on: .*"retryAfterMs":2,/)
    }
  })

  it('a window that slides past a burst at once stays exact, and the next call finds its first live entry in one longer read', async () => {
    // 40 calls 1 µs apart on a window of 1 s, then a call that 30 of them have left: past the 4 cached entries and
    // the 8 read after them. Then calls in the same microsecond up to the limit and beyond (exact waits from the
    // entries found), and one that the rest have left.
    const burst = Array.from({ length: 40 }, () => consumeStep('advance', 1))
    const tag = `{${uniquePrefix()}}`
    const keys = [`${tag}:a`, `${tag}:b`] as const
    const subject = scriptSubject()
    const check = (actual: unknown, expected: unknown, what: string) => expect(actual, what).to.deep.equal(expected)
    const same = Array.from({ length: 35 }, () => consumeStep('same', 0))
    const steps = [...burst, consumeStep('advance', 999_990), ...same, consumeStep('advance', 20)]
    expect(await compareWithModel(subject, keys, [40, 40], [1_000, 1_000], steps, 1, check)).to.equal(77)

    // The same slide, counted on a server of its own (no other client's calls): the header, the next 8 entries and
    // one longer read; not the general code's search.
    const server = await startRedisServer()
    const own = new Redis(server.url)
    try {
      const counted = scriptSubject(own, false)
      await compareWithModel(counted, keys, [40, 40], [1_000, 1_000], burst, 1, check)
      const getranges = async () => (await commandCalls(own))('getrange')
      const before = await getranges()
      counted.setNow(1_700_000_000_000_000 + 40 + 999_990)
      expect(await counted.decide([{ key: keys[0], limit: 40, windowMs: 1_000 }], 1, false)).to.deep.equal([
        { allowed: true, remaining: 40 - 10 - 1, retryAfterMs: 0, resetMs: 1_000 },
      ])
      expect(await getranges(), 'GETRANGE calls of the slide').to.equal(before + 3)
    } finally {
      own.disconnect()
      await server.stop()
    }
  })

  it('a log written to for many windows stays exact: its base moves before a 9-byte entry’s time could overflow', async () => {
    // A window just under 2^37 µs, a call every tenth of a window for 20 windows: the log is never empty (more live
    // entries than the header caches, so entries are read back), and its base would be 2^41 µs old, where 5 bytes
    // of µs wrap, if a rewrite did not move it.
    const steps = Array.from({ length: 200 }, () => consumeStep('advance', 100_000))
    const tag = `{${uniquePrefix()}}`
    const compared = await compareWithModel(
      scriptSubject(),
      [`${tag}:a`, `${tag}:b`],
      [20, 20],
      [137_438_953, 137_438_953],
      steps,
      1,
      (actual, expected, what) => expect(actual, what).to.deep.equal(expected),
    )
    expect(compared).to.equal(200)
    const bytes = await redis.strlen(`${tag}:a`)
    expect((bytes - 85) % 9, 'entries of 9 bytes, then the header').to.equal(0)
    expect(bytes, 'the rewrites drop the entries out of the window').to.be.at.most(100 * 9 + 85)
  })
})

/** A consume of one unit in the first window alone, at the time given: a step written by hand, not generated. */
function consumeStep(time: ModelStep['time'], advance: number): ModelStep {
  return { op: 'consume', time, advance, boundaryUs: 0, cost: 1, both: false, ttl: 0, pick: 0 }
}
