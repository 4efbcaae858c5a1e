import { redisStore } from '@fleetlimit/core'
import { expect } from 'chai'
import fc from 'fast-check'
import type { Redis } from 'ioredis'
import { slidingLogScript } from '../../../packages/core/src/store/scripts.generated.js'
import type { WindowResult } from '../../../packages/core/src/store/store.js'
import { redisClient, uniquePrefix } from '../../support/redis.js'
import {
  compareSettleModel,
  exactly,
  type ModelResult,
  type SettleSubject,
  settleConfig,
  settleSteps,
} from '../../support/settle-model.js'
import { withTestClock } from '../../support/test-clock-script.js'

/**
 * `client` as redisStore sees it, with lua/sliding-log.lua run on the test's clock: each EVAL or EVALSHA of the
 * script sends the test-clock copy instead (test-clock-script.ts), with the time `nowUs()` gives as its two last
 * arguments. Everything else goes to the client as it is.
 */
function onTestClock(client: Redis, nowUs: () => number): Redis {
  const script = withTestClock(slidingLogScript)
  const clockArgs = () => {
    const us = nowUs()
    const seconds = Math.floor(us / 1_000_000)
    return [String(seconds), String(us - seconds * 1_000_000)]
  }
  const isSlidingLog = (command: unknown, body: unknown) =>
    (command === 'EVALSHA' && body === slidingLogScript.sha1) || (command === 'EVAL' && body === slidingLogScript.lua)
  return new Proxy(client, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown
      if (property !== 'call' && property !== 'callBuffer') {
        return typeof value === 'function' ? value.bind(target) : value
      }
      const send = (value as (...args: unknown[]) => Promise<unknown>).bind(target)
      return (command: unknown, body: unknown, ...rest: unknown[]) =>
        isSlidingLog(command, body) ? send('EVAL', script.lua, ...rest, ...clockArgs()) : send(command, body, ...rest)
    },
  })
}

describe('lua/sliding-log.lua through redisStore against the reference model of settles and slots (fast-check, the test’s clock)', () => {
  let redis: Redis
  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())

  /**
   * redisStore on the test's clock as a settle-model subject: its stamps are µs already, a slot's id as given. One
   * for the test (a store watches its client's connection): each schedule runs on keys of its own.
   */
  function redisSubject(): SettleSubject {
    let nowUs = 0
    const store = redisStore(
      onTestClock(redis, () => nowUs),
      { prefix: uniquePrefix() },
    )
    const result = ({ allowed, remaining, retryAfterMs, resetMs, recorded }: WindowResult) => {
      const r: ModelResult = { allowed, remaining, retryAfterMs, resetMs }
      if (recorded !== undefined) r.recorded = recorded
      return r
    }
    const need = <T>(method: T | undefined, name: string): T => {
      if (method === undefined) throw new Error(`redisStore has no ${name}`)
      return method
    }
    return {
      setNow(us) {
        nowUs = us
      },
      async decide(windows, peek) {
        return (peek ? await store.peek(windows) : await store.consume(windows)).map(result)
      },
      free: (slots) => need(store.free, 'free').call(store, slots),
      extend: (slots, ms) => need(store.extend, 'extend').call(store, slots, ms),
      settle: (requests, id) =>
        need(store.settle, 'settle').call(
          store,
          requests.map(({ key, windowMs, recordedUs, delta }) => ({ key, windowMs, recorded: recordedUs, delta })),
          id,
        ),
      refund: (requests, id) =>
        need(store.refund, 'refund').call(
          store,
          requests.map(({ key, windowMs, recordedUs, units }) => ({ key, windowMs, recorded: recordedUs, units })),
          0,
          id,
        ),
    }
  }

  it('every reply is the model’s: mixed costs, slot windows, shadows, settles up and down, refunds, retries, lost answers, frees, extends', async function () {
    this.timeout(180_000)
    let compared = 0
    const seen = new Map<string, number>()
    const subject = redisSubject()
    // The test's clock starts at the server's time, whole µs, so that an expiry set from it is a real one.
    const [seconds] = await redis.time()
    const startUs = Number(seconds) * 1_000_000
    await fc.assert(
      fc.asyncProperty(settleConfig(), settleSteps(120), async (config, steps) => {
        const tag = `{${uniquePrefix()}}`
        const keys = [`${tag}:rpm`, `${tag}:tpm`, `${tag}:par`] as const
        compared += await compareSettleModel(subject, keys, config, steps, 1, startUs, exactly, seen)
      }),
      { numRuns: 80 },
    )
    expect(compared, 'replies checked against the model').to.be.greaterThan(2_500)
    for (const what of [
      'settled',
      'settled up',
      'settled down, capped',
      'already-settled',
      'expired',
      'freed',
      'refund refunded',
      'refund after a settle',
      'refunded',
    ]) {
      expect(seen.get(what) ?? 0, `${what}: ${JSON.stringify([...seen])}`).to.be.greaterThan(0)
    }
  })
})
