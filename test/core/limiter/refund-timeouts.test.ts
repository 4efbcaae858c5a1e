import {
  createRateLimiter,
  type Decision,
  isFleetlimitError,
  type RateLimiter,
  type RefundResult,
  redisStore,
} from '@fleetlimit/core'
import { type RedisServer, startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { expect } from 'chai'
import fc from 'fast-check'
import type { Redis } from 'ioredis'
import { defaultClient } from '../../support/faults.js'
import { uniquePrefix } from '../../support/redis.js'

/**
 * Refunds that time out, on a Redis of this suite's own: held by CLIENT PAUSE … WRITE until past their deadline
 * (not applied), or applied while this process reads nothing until the deadline has passed (the answer comes
 * late). Either way a retry applies the refund at most once.
 */
describe('refunds that time out, on Redis', () => {
  const TIMEOUT_MS = 50
  let server: RedisServer
  let client: Redis
  let admin: Redis
  const warnings: string[] = []
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

  const limiterOf = (limit: number) =>
    createRateLimiter({
      store: redisStore(client, { prefix: uniquePrefix(), breaker: { failureThreshold: 1_000 } }),
      limit,
      window: '1h',
      local: false,
      timeoutMs: TIMEOUT_MS,
      logger: { warn: (message) => warnings.push(message) },
    })

  type Tried = { readonly result: RefundResult } | { readonly error: unknown }
  const tryRefund = (limiter: RateLimiter, decision: Decision): Promise<Tried> =>
    limiter.refund(decision).then(
      (result) => ({ result }),
      (error: unknown) => ({ error }),
    )

  /** A refund held by CLIENT PAUSE … WRITE for `ms`, past its deadline; resolves once the pause is over. */
  async function pausedRefund(limiter: RateLimiter, decision: Decision, ms = TIMEOUT_MS * 3): Promise<Tried> {
    await admin.call('CLIENT', 'PAUSE', String(ms), 'WRITE')
    const tried = await tryRefund(limiter, decision)
    // A write of this client's own waits for the pause to end.
    await admin.set(`${uniquePrefix()}:pause-over`, '1')
    return tried
  }

  /** A refund Redis applies while this process reads no reply until its deadline has passed. */
  async function lateAnswer(limiter: RateLimiter, decision: Decision): Promise<Tried> {
    client.stream.pause()
    try {
      return await tryRefund(limiter, decision)
    } finally {
      client.stream.resume()
    }
  }

  const errorOf = (tried: Tried) => ('error' in tried ? tried.error : tried.result)

  const used = async (limiter: RateLimiter, limit: number) => limit - (await limiter.peek('t')).remaining

  it('a refund held past its deadline by CLIENT PAUSE WRITE is not applied; its retry is, once', async () => {
    warnings.length = 0
    const limiter = limiterOf(3)
    const [d] = await Promise.all([limiter.consume('t'), limiter.consume('t'), limiter.consume('t')])
    const error = errorOf(await pausedRefund(limiter, d, 400))
    expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE'), String(error)).to.equal(true)
    expect(String(error)).to.include('may or may not have been applied')
    expect(warnings).to.have.length(1)
    expect(warnings[0]).to.match(/did not confirm a refund for policy "3-per-3600000ms" \(no answer within timeoutMs/)
    expect(warnings[0]).to.include('refund(decision) again applies it at most once')
    expect(await used(limiter, 3), 'the late refund applied nothing').to.equal(3)
    expect(await limiter.refund(d)).to.deep.equal({ units: 1, outcome: 'refunded' })
    expect(await limiter.refund(d)).to.deep.equal({ units: 0, outcome: 'already-refunded' })
    const admitted = []
    for (let i = 0; i < 3; i++) admitted.push((await limiter.consume('t')).allowed)
    expect(admitted, 'one unit given back, once').to.deep.equal([true, false, false])
  })

  it('a refund applied whose answer came too late: its retry reports already-refunded and removes nothing', async () => {
    const limiter = limiterOf(3)
    const [d] = await Promise.all([limiter.consume('t'), limiter.consume('t'), limiter.consume('t')])
    const error = errorOf(await lateAnswer(limiter, d))
    expect(String(error)).to.include(`no answer within timeoutMs (${TIMEOUT_MS} ms)`)
    expect(await used(limiter, 3), 'applied all the same').to.equal(2)
    expect(await limiter.refund(d)).to.deep.equal({ units: 0, outcome: 'already-refunded' })
    expect(await used(limiter, 3)).to.equal(2)
  })

  it('a refund not sent (the breaker open) says its units still count', async () => {
    warnings.length = 0
    const store = redisStore(client, { prefix: uniquePrefix(), breaker: { failureThreshold: 1, cooldownMs: 60_000 } })
    const logger = { warn: (message: string) => warnings.push(message) }
    const limiter = createRateLimiter({ store, limit: 3, window: '1h', local: false, timeoutMs: TIMEOUT_MS, logger })
    const d = await limiter.consume('t')
    // One stalled call opens this breaker.
    await pausedRefund(limiter, d)
    warnings.length = 0
    const error = errorOf(await tryRefund(limiter, d))
    expect(String(error)).to.include('the circuit breaker is open')
    expect(String(error)).to.include('it was not applied: its unit still counts until it leaves the window')
    expect(warnings).to.deep.equal([])
  })

  it('an acquire that gave up while Redis was paused leaves no unit behind (limit 1, CLIENT PAUSE 60 WRITE)', async () => {
    const store = redisStore(client, { prefix: uniquePrefix() })
    const refund = store.refund?.bind(store) as NonNullable<typeof store.refund>
    // The refund is made off the caller's path: each one settled is the signal to look at the window.
    const refunds: (() => void)[] = []
    store.refund = async (...args) => {
      const result = await refund(...args)
      refunds.shift()?.()
      return result
    }
    // A deadline well past the pause: the admission is recorded, after its waiter gave up.
    const limiter = createRateLimiter({ store, limit: 1, window: '1m', local: false, timeoutMs: '1s' })
    for (const key of ['a', 'b', 'c', 'd', 'e']) {
      const refunded = new Promise<void>((resolve) => refunds.push(resolve))
      await admin.call('CLIENT', 'PAUSE', '60', 'WRITE')
      const error = await limiter.acquire(key, { maxWaitMs: 20 }).then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_TIMEOUT'), String(error)).to.equal(true)
      await refunded
      expect(await limiter.consume(key), key).to.include({ allowed: true, remaining: 0 })
    }
    expect(limiter.stats()).to.include({ refundedUnits: 5 })
  })

  it('random schedules of consumes, refunds, paused and late-answered refunds and retries never leave fewer units than the model', async function () {
    this.timeout(60_000)
    const LIMIT = 8
    type Step =
      | { op: 'consume'; cost: number }
      | { op: 'burst'; count: number }
      | { op: 'refund' | 'paused' | 'late'; pick: number }
    const step: fc.Arbitrary<Step> = fc.oneof(
      {
        weight: 3,
        arbitrary: fc.record({ op: fc.constant('consume' as const), cost: fc.integer({ min: 1, max: 3 }) }),
      },
      { weight: 2, arbitrary: fc.record({ op: fc.constant('burst' as const), count: fc.integer({ min: 2, max: 4 }) }) },
      {
        weight: 4,
        arbitrary: fc.record({ op: fc.constantFrom('refund', 'paused', 'late', 'late'), pick: fc.nat() }),
      },
    )
    let checked = 0
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 12 }), async (steps) => {
        const limiter = limiterOf(LIMIT)
        // The model: every admission counts until a refund of it is known to have been applied; a refund that
        // failed may have been ('unknown').
        const admitted: { decision: Decision; units: number; state: 'counted' | 'unknown' | 'refunded' }[] = []
        const units = (state: string) => admitted.filter((a) => a.state === state).reduce((sum, a) => sum + a.units, 0)
        for (const [i, s] of steps.entries()) {
          const what = `step ${i} (${s.op}) of ${JSON.stringify(steps)}`
          if (s.op === 'consume' || s.op === 'burst') {
            const cost = s.op === 'consume' ? s.cost : 1
            const count = s.op === 'burst' ? s.count : 1
            const decisions = await Promise.all(Array.from({ length: count }, () => limiter.consume('t', { cost })))
            for (const decision of decisions) {
              if (decision.allowed) admitted.push({ decision, units: cost, state: 'counted' })
            }
          } else {
            const target = admitted[s.pick % Math.max(1, admitted.length)]
            if (!target) continue
            const tried =
              s.op === 'paused'
                ? await pausedRefund(limiter, target.decision)
                : s.op === 'late'
                  ? await lateAnswer(limiter, target.decision)
                  : await tryRefund(limiter, target.decision)
            // A timed-out refund is the point of 'paused' and 'late'; a loaded machine may let one through.
            if ('error' in tried) {
              if (target.state === 'counted') target.state = 'unknown'
            } else if (tried.result.outcome === 'refunded') {
              expect(target.state, what).to.not.equal('refunded')
              expect(tried.result.units, what).to.equal(target.units)
              target.state = 'refunded'
            } else {
              expect(tried.result.outcome, what).to.equal('already-refunded')
              expect(target.state, `${what}: a refund never applied`).to.not.equal('counted')
              target.state = 'refunded'
            }
          }
          const held = await used(limiter, LIMIT)
          expect(held, `${what}: never fewer units than the model counts`).to.be.at.least(units('counted'))
          expect(held, `${what}: at most those that may count`).to.be.at.most(units('counted') + units('unknown'))
          checked++
        }
      }),
      { numRuns: 25 },
    )
    expect(checked).to.be.greaterThan(30)
  })
})
