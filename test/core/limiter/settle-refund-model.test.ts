import {
  createRateLimiter,
  type Decision,
  memoryStore,
  type RateLimiter,
  redisStore,
  type Store,
} from '@fleetlimit/core'
import { type RedisServer, startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { expect } from 'chai'
import fc from 'fast-check'
import type { Redis } from 'ioredis'
import { defaultClient } from '../../support/faults.js'
import { compareReceiptModel, type Fault, type ReceiptSubject, receiptSteps } from '../../support/receipt-model.js'
import { uniquePrefix } from '../../support/redis.js'

const LIMIT = 10_000

/** A limiter on a memory store whose settles and refunds fail as the test says (see Fault), exactly. */
function memorySubject(): ReceiptSubject {
  const base = memoryStore()
  let fault: Fault = 'none'
  const failing =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      const now = fault
      if (now === 'unsent') throw new Error('not sent')
      const result = await call(...args)
      if (now === 'lost') throw new Error('the answer was lost')
      return result
    }
  const store: Store = { ...base, settle: failing(base.settle), refund: failing(base.refund) }
  const limiter = createRateLimiter({ store, limit: LIMIT, window: '1h', local: false, logger: { warn() {} } })
  return {
    limiter,
    async withFault(set, call) {
      fault = set
      try {
        return await call()
      } finally {
        fault = 'none'
      }
    },
    used: async () => LIMIT - (await limiter.peek('t')).remaining,
  }
}

describe('settles and refunds against the model of receipts, with failed, late and retried calls', () => {
  it('memoryStore (answers lost or calls unsent by a wrapper): every refund removes what its decision holds', async function () {
    this.timeout(60_000)
    const seen = new Map<string, number>()
    let checked = 0
    await fc.assert(
      fc.asyncProperty(receiptSteps(30), async (steps) => {
        checked += await compareReceiptModel(memorySubject(), steps, seen)
      }),
      { numRuns: 300, seed: 37 },
    )
    expect(checked).to.be.greaterThan(3_000)
    for (const what of [
      'settle failed (lost)',
      'settle failed (unsent)',
      'settle refunded',
      'settle already-settled',
      'refund failed (lost)',
      'refund failed (unsent)',
      'refund refunded',
      'refund already-refunded',
      'refund of a decision settled to 0',
    ]) {
      expect(seen.get(what) ?? 0, `${what}: ${JSON.stringify([...seen])}`).to.be.greaterThan(0)
    }
  })

  describe('on a redis-server of its own (CLIENT PAUSE WRITE: not applied in time; a paused socket: the answer late)', () => {
    const TIMEOUT_MS = 50
    let server: RedisServer
    let client: Redis
    let admin: Redis
    before(async () => {
      server = await startRedisServer()
      client = await defaultClient(server.url)
      admin = await defaultClient(server.url)
    })
    after(async () => {
      client.disconnect()
      admin.disconnect()
      await server.stop()
    })

    const limiterOf = (limit: number): RateLimiter =>
      createRateLimiter({
        store: redisStore(client, { prefix: uniquePrefix(), breaker: { failureThreshold: 1_000 } }),
        limit,
        window: '1h',
        local: false,
        timeoutMs: TIMEOUT_MS,
        logger: { warn() {} },
      })

    /** Runs `call` with its store call failing as `fault` says; resolves once Redis is past any pause. */
    async function withFault<T>(fault: Fault, call: () => Promise<T>): Promise<T> {
      if (fault === 'unsent') {
        await admin.call('CLIENT', 'PAUSE', String(TIMEOUT_MS * 3), 'WRITE')
        try {
          return await call()
        } finally {
          // A write of this client's own waits for the pause to end.
          await admin.set(`${uniquePrefix()}:pause-over`, '1')
        }
      }
      if (fault === 'lost') client.stream.pause()
      try {
        return await call()
      } finally {
        if (fault === 'lost') client.stream.resume()
      }
    }

    const failed = (promise: Promise<unknown>) =>
      promise.then(
        (answer) => ({ answer }),
        (error: unknown) => ({ error: String(error) }),
      )
    const used = async (limiter: RateLimiter, limit: number) => limit - (await limiter.peek('t')).remaining

    /** Two decisions of 10 units in one script run, so in one entry of the window (limit 20). */
    async function twoInOneEntry(limiter: RateLimiter): Promise<[Decision, Decision]> {
      const [d1, d2] = await Promise.all([limiter.consume('t', { cost: 10 }), limiter.consume('t', { cost: 10 })])
      expect([d1.allowed, d2.allowed]).to.deep.equal([true, true])
      expect(await used(limiter, 20)).to.equal(20)
      return [d1, d2]
    }

    it('a settle to 60 that timed out unapplied: refund gives back the 10 admitted, and the other decision’s 10 stay', async () => {
      const limiter = limiterOf(20)
      const [d1, d2] = await twoInOneEntry(limiter)
      const settled = await failed(withFault('unsent', () => limiter.settle(d1, { cost: 60 })))
      expect(settled).to.have.property('error').that.includes('no answer within timeoutMs (50 ms)')
      expect(await used(limiter, 20), 'the settle was not applied').to.equal(20)
      expect(await limiter.refund(d1)).to.deep.equal({ units: 10, outcome: 'refunded' })
      expect(await used(limiter, 20), 'd2’s 10 still count').to.equal(10)
      expect(await limiter.settle(d1, { cost: 60 }), 'a settle after the refund').to.deep.equal({
        outcome: 'refunded',
        overLimit: 0,
      })
      expect(await used(limiter, 20)).to.equal(10)
      expect(await limiter.refund(d2)).to.deep.equal({ units: 10, outcome: 'refunded' })
      expect(await used(limiter, 20)).to.equal(0)
    })

    it('a settle to 60 applied whose answer came late: refund gives back the 60 it holds, and d2’s 10 stay', async () => {
      const limiter = limiterOf(20)
      const [d1] = await twoInOneEntry(limiter)
      const settled = await failed(withFault('lost', () => limiter.settle(d1, { cost: 60 })))
      expect(settled).to.have.property('error').that.includes('no answer within timeoutMs (50 ms)')
      expect(await limiter.refund(d1)).to.deep.equal({ units: 60, outcome: 'refunded' })
      expect(await used(limiter, 20), 'd2’s 10 still count').to.equal(10)
      expect(await limiter.refund(d1)).to.deep.equal({ units: 0, outcome: 'already-refunded' })
      expect(await used(limiter, 20)).to.equal(10)
    })

    it('a settle to 0 that timed out unapplied: refund gives back the 10 admitted', async () => {
      const limiter = limiterOf(20)
      const [d1] = await twoInOneEntry(limiter)
      const settled = await failed(withFault('unsent', () => limiter.settle(d1, { cost: 0 })))
      expect(settled).to.have.property('error')
      expect(await limiter.refund(d1)).to.deep.equal({ units: 10, outcome: 'refunded' })
      expect(await used(limiter, 20)).to.equal(10)
    })

    it('a refund applied whose answer came late: a settle after it changes nothing, its retry removes nothing', async () => {
      const limiter = limiterOf(20)
      const [d1] = await twoInOneEntry(limiter)
      expect(await failed(withFault('lost', () => limiter.refund(d1)))).to.have.property('error')
      expect(await used(limiter, 20)).to.equal(10)
      expect(await limiter.settle(d1, { cost: 15 })).to.deep.equal({ outcome: 'refunded', overLimit: 0 })
      expect(await used(limiter, 20), 'the settle after the refund added nothing').to.equal(10)
      expect(await limiter.refund(d1)).to.deep.equal({ units: 0, outcome: 'already-refunded' })
      expect(await used(limiter, 20)).to.equal(10)
    })

    it('random schedules of settles and refunds, unapplied, late and retried, against the model of receipts', async function () {
      this.timeout(120_000)
      const seen = new Map<string, number>()
      let checked = 0
      await fc.assert(
        fc.asyncProperty(receiptSteps(12), async (steps) => {
          const limiter = limiterOf(LIMIT)
          const subject: ReceiptSubject = { limiter, withFault, used: () => used(limiter, LIMIT) }
          checked += await compareReceiptModel(subject, steps, seen)
        }),
        { numRuns: 25, seed: 41 },
      )
      expect(checked).to.be.greaterThan(100)
      for (const what of ['settle failed (lost)', 'refund failed (lost)', 'refund refunded']) {
        expect(seen.get(what) ?? 0, `${what}: ${JSON.stringify([...seen])}`).to.be.greaterThan(0)
      }
    })
  })
})
