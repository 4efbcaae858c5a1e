import { expect } from 'chai'
import fc from 'fast-check'
import type { Redis } from 'ioredis'
import { createScriptRunner } from '../../../packages/core/src/store/script-runner.js'
import { slidingLogScript } from '../../../packages/core/src/store/scripts.generated.js'
import { readSlidingLog, replyBody, splitRun } from '../../../packages/core/src/store/sliding-log-call.js'
import { withoutFastPath } from '../../support/general-path-script.js'
import { redisClient, uniquePrefix } from '../../support/redis.js'
import { textCall } from '../../support/sliding-log-call.js'
import { withTestClock } from '../../support/test-clock-script.js'

/** One call of a run: its keys (by index into the test's keys), its readable argument, the windows it replies for. */
interface RunCall {
  readonly keys: readonly number[]
  readonly args: readonly (string | number)[]
  readonly windows: number
}

const WINDOWS_MS = [1_000, 5_000] as const
const LIMIT = 6

/** A random call on the test's three keys: consumes and peeks of one or two windows, leases, holds. */
const arbitraryCall: fc.Arbitrary<RunCall> = fc.oneof(
  fc
    .record({
      op: fc.constantFrom('c', 'p'),
      cost: fc.integer({ min: 1, max: 4 }),
      key: fc.integer({ min: 0, max: 2 }),
    })
    .map(({ op, cost, key }) => ({ keys: [key], args: [op, cost, 0, LIMIT, WINDOWS_MS[0], '0'], windows: 1 })),
  fc.record({ cost: fc.integer({ min: 1, max: 3 }), block: fc.constantFrom('0', '300') }).map(({ cost, block }) => ({
    keys: [0, 1],
    args: ['c', cost, 0, LIMIT, WINDOWS_MS[0], block, LIMIT + 2, WINDOWS_MS[1], '0'],
    windows: 2,
  })),
  fc
    .integer({ min: 1, max: 5 })
    .map((want) => ({ keys: [2], args: ['l', want, 0, LIMIT, WINDOWS_MS[0], '0', 1, want, 200], windows: 1 })),
  fc.integer({ min: 1, max: 400 }).map((ms) => ({ keys: [1], args: ['z', ms, 0, 1, WINDOWS_MS[0], '0'], windows: 0 })),
)

/** A call's reply decoded (so that a difference names its field), or its bytes when it is an error. */
function decoded(reply: Buffer | undefined, call: RunCall): unknown {
  try {
    return reply && readSlidingLog(reply, call.windows)
  } catch {
    return reply?.toString('hex')
  }
}

describe('lua/sliding-log.lua: several calls in one run', () => {
  let redis: Redis
  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())

  const script = withTestClock(slidingLogScript)
  // The same script with its fast path off: every call decided by the general code.
  const general = withTestClock(withoutFastPath(slidingLogScript))
  const clockArgs = (nowUs: number) => {
    const seconds = Math.floor(nowUs / 1_000_000)
    return [String(seconds), String(nowUs - seconds * 1_000_000)]
  }
  /**
   * Runs `calls` on `keys` at `nowUs` as one run, in one argument as a store sends them (the other tests here send
   * one call per argument, which the script takes too); each call's reply.
   */
  async function run(
    keys: readonly string[],
    calls: readonly RunCall[],
    nowUs: number,
    fastPath = true,
  ): Promise<Buffer[]> {
    const reply = await createScriptRunner(redis).runBuffer(
      fastPath ? script : general,
      calls.flatMap((call) => call.keys.map((k) => keys[k] as string)),
      [Buffer.concat(calls.map((call) => textCall(call.args))), ...clockArgs(nowUs)],
    )
    return splitRun(
      reply,
      calls.map((call) => replyBody(call.windows)),
    )
  }

  it('answers each call and leaves each key exactly as the same calls made one at a time at that instant, fast path on or off', async function () {
    this.timeout(120_000)
    let compared = 0
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ call: arbitraryCall, afterUs: fc.integer({ min: 0, max: 400_000 }) }), { maxLength: 12 }),
        fc.array(arbitraryCall, { minLength: 2, maxLength: 24 }),
        async (before, batch) => {
          const tag = uniquePrefix()
          const together = [0, 1, 2].map((i) => `{${tag}-a}:${i}`)
          const alone = [0, 1, 2].map((i) => `{${tag}-b}:${i}`)
          // The same history and the same run with the fast path off.
          const generalKeys = [0, 1, 2].map((i) => `{${tag}-c}:${i}`)
          let nowUs = 1_700_000_000_000_000
          for (const { call, afterUs } of before) {
            nowUs += afterUs
            for (const keys of [together, alone]) await run(keys, [call], nowUs)
            await run(generalKeys, [call], nowUs, false)
          }
          nowUs += 1
          const replies = await run(together, batch, nowUs)
          const repliesOff = await run(generalKeys, batch, nowUs, false)
          for (const [i, call] of batch.entries()) {
            const [one] = await run(alone, [call], nowUs)
            const what = `call ${i} (${call.args.join(' ')})`
            expect(replies[i]?.toString('hex'), what).to.equal(one?.toString('hex'))
            const [off, single] = [decoded(repliesOff[i], call), decoded(one, call)]
            const shown = `${JSON.stringify(off)}, alone: ${JSON.stringify(single)}`
            expect(off, `${what}, fast path off: ${shown}`).to.deep.equal(single)
            expect(repliesOff[i]?.toString('hex'), `${what}, fast path off`).to.equal(one?.toString('hex'))
          }
          for (const i of [0, 1, 2]) {
            const [a, b, c] = await Promise.all([
              redis.getBuffer(together[i] as string),
              redis.getBuffer(alone[i] as string),
              redis.getBuffer(generalKeys[i] as string),
            ])
            expect(a?.toString('hex'), `key ${i}`).to.equal(b?.toString('hex'))
            expect(c?.toString('hex'), `key ${i}, fast path off`).to.equal(b?.toString('hex'))
          }
          compared += batch.length
        },
      ),
      { numRuns: 60 },
    )
    expect(compared).to.be.greaterThan(300)
  })

  it('an error about one call’s key fails that call alone: the calls around it are decided and recorded', async () => {
    const tag = uniquePrefix()
    const [good, broken] = [`{${tag}}:good`, `{${tag}}:broken`]
    await redis.hset(broken, 'not', 'a log')
    const consume = { args: ['c', 1, 0, 5, 60_000, '0'], windows: 1 }
    const reply = await createScriptRunner(redis).runBuffer(
      slidingLogScript,
      [good, broken, broken, good, good],
      [
        textCall(consume.args),
        textCall(consume.args),
        textCall(['c', 1, 0, 5, 60_000, '0', 5, 60_000, '0']),
        textCall(consume.args),
      ],
    )
    const parts = splitRun(
      reply,
      [1, 1, 2, 1].map((windows) => replyBody(windows)),
    )
    expect(readSlidingLog(parts[0], 1).windows[0]).to.include({ allowed: true, remaining: 4 })
    for (const failed of [parts[1], parts[2]]) {
      expect(() => readSlidingLog(failed, 1))
        .to.throw(/^WRONGTYPE/)
        .with.property('name', 'ReplyError')
    }
    expect(readSlidingLog(parts[3], 1).windows[0]).to.include({ allowed: true, remaining: 3 })
    expect(await redis.hgetall(broken)).to.deep.equal({ not: 'a log' })
    // The two-window call named a good key too: it recorded nothing there.
    expect(await redis.strlen(good), 'two admissions at one instant: one entry').to.equal(9 + 85)
  })

  it('a call past its deadline records nothing; the others in its run are decided as usual', async () => {
    const key = `{${uniquePrefix()}}:k`
    const reply = await createScriptRunner(redis).runBuffer(
      slidingLogScript,
      [key, key, key],
      [
        textCall(['c', 1, 0, 5, 60_000, '0']),
        textCall(['c', 1, 1, 5, 60_000, '0']),
        textCall(['c', 2, 0, 5, 60_000, '0']),
      ],
    )
    const first = readSlidingLog(reply.subarray(0, 38), 1)
    const late = readSlidingLog(reply.subarray(38, 51), 1)
    const third = readSlidingLog(reply.subarray(51), 1)
    expect(first.windows[0]).to.include({ allowed: true, remaining: 4 })
    expect(late).to.include({ status: -1, units: 0 })
    expect(third.windows[0]).to.include({ allowed: true, remaining: 2 })
    expect([first.nowUs, late.nowUs], 'one server time for the run').to.deep.equal([third.nowUs, third.nowUs])
  })

  it('refuses a call whose stated length is shorter than a call, rather than reading the same bytes forever', async () => {
    const key = `{${uniquePrefix()}}:k`
    const good = textCall(['c', 1, 0, 5, 60_000, '0'])
    const short = Buffer.from(good)
    short.writeUInt16BE(3, 0)
    const refused = await createScriptRunner(redis)
      .runBuffer(slidingLogScript, [key, key], [Buffer.concat([good, short])])
      .catch((error: unknown) => error)
    expect(refused)
      .to.be.instanceOf(Error)
      .with.property('message')
      .match(/a call of 3 bytes is shorter than its header/)
    expect(await redis.exists(key), 'a script that errors is not rolled back: the first call is recorded').to.equal(1)
  })
})
