import {
  createRateLimiter,
  type Decision,
  definePolicy,
  isFleetlimitError,
  memoryStore,
  type RateLimiter,
  type RateLimiterOptions,
  redisStore,
  type Store,
} from '@fleetlimit/core'
import { expect } from 'chai'
import fc from 'fast-check'
import { optionErrorOf, optionErrorOfAsync } from '../../support/option-error.js'
import { redisClient, uniquePrefix } from '../../support/redis.js'
import { storeKinds, useStoreClients } from '../../support/stores.js'

const QUIET = { warn() {} }
/** Units a key's window holds now. */
const used = async (limiter: RateLimiter, key: string, limit: number) => limit - (await limiter.peek(key)).remaining

/** Admits one call at its estimate and settles it to `cost`; resolves with the admission. */
async function call(limiter: RateLimiter, key: string, cost: number): Promise<Decision> {
  const decision = await limiter.consume(key, { cost: 'estimate' })
  expect(decision.allowed, `${key} admitted`).to.equal(true)
  expect((await limiter.settle(decision, { cost })).outcome).to.equal('settled')
  return decision
}

describe("estimated costs: cost: 'estimate', settled after (limiter/estimated-calls.ts)", () => {
  useStoreClients()

  for (const kind of storeKinds.filter((k) => k.name === 'memoryStore' || k.name === 'redisStore')) {
    describe(kind.name, () => {
      const limiterOf = (options: RateLimiterOptions) =>
        createRateLimiter({ store: kind.make(), logger: QUIET, local: false, ...options })

      it('reserves `initial` at first, the p90 of the settled costs after 10, and the window holds exactly the settled costs', async () => {
        const limiter = limiterOf({ limit: 100_000, window: '1h', estimate: { initial: 500 } })
        const costs = [10, 20, 30, 40, 50, 60, 70, 80, 90, 1_000]
        const reserved: number[] = []
        for (const cost of costs) {
          const decision = await limiter.consume('t', { cost: 'estimate' })
          reserved.push(decision.reserved as number)
          expect(await used(limiter, 't', 100_000), 'the reservation is recorded').to.equal(
            costs.slice(0, reserved.length - 1).reduce((a, b) => a + b, 0) + 500,
          )
          await limiter.settle(decision, { cost })
        }
        expect(reserved).to.deep.equal(Array(10).fill(500))
        expect(await used(limiter, 't', 100_000), 'after each settle: the true costs').to.equal(1_450)
        const next = await limiter.consume('t', { cost: 'estimate' })
        expect(next).to.include({ allowed: true, reserved: 90, remaining: 100_000 - 1_450 - 90 })
        expect(await limiter.settle(next, { cost: 90 }), 'a settle whose delta is 0').to.deep.equal({
          outcome: 'settled',
          overLimit: 0,
        })
        expect(await used(limiter, 't', 100_000)).to.equal(1_540)
        // Eleven costs now; the p90 is the 10th smallest (rank ceil(9.9) = 10): 90, then the 1,000.
        expect((await limiter.consume('t', { cost: 'estimate' })).reserved).to.equal(90)
      })

      it('keeps estimates per key: one tenant’s huge costs do not raise another’s', async () => {
        const limiter = limiterOf({ limit: 1_000_000, window: '1h', estimate: { initial: 100 } })
        for (let i = 0; i < 12; i++) {
          await call(limiter, 'heavy', 50_000)
          await call(limiter, 'light', 40)
        }
        expect((await limiter.consume('heavy', { cost: 'estimate' })).reserved).to.equal(50_000)
        expect((await limiter.consume('light', { cost: 'estimate' })).reserved).to.equal(40)
        expect((await limiter.consume('new', { cost: 'estimate' })).reserved).to.equal(100)
        expect(
          (await limiter.consume({ tenant: 'light', route: 'POST /chat' }, { cost: 'estimate' })).reserved,
          'another route is another key',
        ).to.equal(100)
      })

      it('never reserves more than the call’s limit, nor less than 1', async () => {
        const limiter = limiterOf({ limit: 1_000, window: '1h', estimate: { initial: 10, samples: 10 } })
        for (let i = 0; i < 10; i++) {
          const decision = await limiter.consume('t', { cost: 'estimate' })
          await limiter.settle(decision, { cost: 5_000 })
          await limiter.reset('t')
        }
        expect(await limiter.consume('t', { cost: 'estimate' })).to.include({ allowed: true, reserved: 1_000 })
        expect(await limiter.consume('u', { cost: 'estimate', limit: 50 })).to.include({ reserved: 10, limit: 50 })
        await limiter.reset('t')
        expect(await limiter.consume('t', { cost: 'estimate', limit: 300 })).to.include({
          allowed: true,
          reserved: 300,
        })
      })

      it('10,000 concurrent estimated calls admit exactly what fits in the limit', async function () {
        this.timeout(60_000)
        // A deadline with room: 10,000 calls queue on one connection of a shared machine.
        const limiter = limiterOf({ limit: 50_000, window: '1h', timeoutMs: '20s', estimate: { initial: 7 } })
        const decisions = await Promise.all(
          Array.from({ length: 10_000 }, () => limiter.consume('t', { cost: 'estimate' })),
        )
        const admitted = decisions.filter((d) => d.allowed)
        expect(admitted.length).to.equal(Math.floor(50_000 / 7))
        expect(new Set(decisions.map((d) => d.reserved))).to.deep.equal(new Set([7]))
        expect(await used(limiter, 't', 50_000)).to.equal(7_142 * 7)
      })

      it('a settle above the estimate puts the window over its limit, says so, and later calls wait for it', async () => {
        const limiter = limiterOf({ limit: 100, window: '1h', name: 'tokens', estimate: { initial: 10 } })
        const admitted = await Promise.all(Array.from({ length: 10 }, () => limiter.consume('t', { cost: 'estimate' })))
        expect(admitted.every((d) => d.allowed)).to.equal(true)
        expect((await limiter.consume('t', { cost: 'estimate' })).allowed, 'full').to.equal(false)
        const results = []
        for (const decision of admitted) results.push(await limiter.settle(decision, { cost: 15 }))
        expect(results.at(-1)).to.deep.equal({ outcome: 'settled', overLimit: 50, overPolicy: 'tokens' })
        expect(await limiter.refund(admitted[0] as Decision), 'the first holds its 15').to.deep.equal({
          units: 15,
          outcome: 'refunded',
        })
        expect((await limiter.consume('t', { cost: 1 })).allowed, 'still 35 over').to.equal(false)
        const after = await limiter.consume('t', { cost: 'estimate' })
        expect(after).to.include({ allowed: false, remaining: 0, reserved: 15 })
      })

      it('refuses a settle of NaN, a negative, a fraction or a huge cost, recording and learning nothing', async () => {
        const limiter = limiterOf({ limit: 10_000, window: '1h', estimate: { initial: 100, samples: 10 } })
        for (let i = 0; i < 9; i++) await call(limiter, 't', 30)
        const decision = await limiter.consume('t', { cost: 'estimate' })
        for (const cost of [Number.NaN, -5, 2.5, Number.POSITIVE_INFINITY, 1e12, '500' as never]) {
          const error = await optionErrorOfAsync(() => limiter.settle(decision, { cost }))
          expect(error.option, String(cost)).to.equal('settle cost')
        }
        expect(await used(limiter, 't', 10_000), 'nine settled at 30, one reservation of 100').to.equal(370)
        expect((await limiter.consume('t', { cost: 'estimate' })).reserved, 'still nine costs: initial').to.equal(100)
        await limiter.settle(decision, { cost: 30 })
        expect((await limiter.consume('t', { cost: 'estimate' })).reserved).to.equal(30)
      })

      it('a settle to 0 (a call the upstream did not charge) teaches nothing', async () => {
        const limiter = limiterOf({ limit: 10_000, window: '1h', estimate: { initial: 100, samples: 10 } })
        for (let i = 0; i < 20; i++) await call(limiter, 't', 0)
        expect((await limiter.consume('t', { cost: 'estimate' })).reserved).to.equal(100)
      })

      it('a settle that gives units back admits this process’s waiter at once, not when the window slides', async () => {
        const limiter = limiterOf({ limit: 100, window: '1h', estimate: { initial: 60 } })
        const first = await limiter.consume('t', { cost: 'estimate' })
        let admittedAt = ''
        const waiting = limiter.acquire('t', { cost: 'estimate', maxWaitMs: '2h' }).then((decision) => {
          admittedAt = 'admitted'
          return decision
        })
        // Two store round trips: the waiter was denied and sleeps, for the hour its denial reported.
        await limiter.peek('t')
        await limiter.peek('t')
        expect(admittedAt).to.equal('')
        expect(await limiter.settle(first, { cost: 10 })).to.include({ outcome: 'settled' })
        expect(await waiting).to.include({ allowed: true, reserved: 60, remaining: 30 })
        expect(await used(limiter, 't', 100)).to.equal(70)
      })

      it('a settle wakes a waiter that has its own limit and an in-flight policy beside it', async () => {
        const limiter = limiterOf({
          policies: [
            definePolicy({ name: 'tpm', limit: 1_000, window: '1h' }),
            definePolicy({ name: 'parallel', concurrency: 5 }),
          ],
          estimate: { initial: 60, policy: 'tpm' },
        })
        const plan = { limit: { tpm: 100 } }
        const first = await limiter.consume('t', { cost: 'estimate', ...plan })
        let admitted = false
        const waiting = limiter.acquire('t', { cost: 'estimate', maxWaitMs: '2h', ...plan }).then((decision) => {
          admitted = true
          return decision
        })
        await limiter.peek('t')
        await limiter.peek('t')
        expect(admitted).to.equal(false)
        expect(await limiter.settle(first, { cost: { tpm: 10 } })).to.include({ outcome: 'settled' })
        expect(await waiting).to.include({ allowed: true, reserved: 60 })
        const tpm = (await limiter.peek('t', plan)).policies?.find((d) => d.policy === 'tpm')
        expect(tpm?.remaining, 'tpm: 10 settled, 60 reserved').to.equal(30)
      })

      it('refunds and releases an estimated decision as any other', async () => {
        const limiter = limiterOf({
          policies: [
            definePolicy({ name: 'rpm', limit: 100, window: '1h' }),
            definePolicy({ name: 'tpm', limit: 10_000, window: '1h' }),
            definePolicy({ name: 'parallel', concurrency: 2 }),
          ],
          estimate: { initial: 400, policy: 'tpm' },
        })
        const decision = await limiter.acquire('t', { cost: 'estimate', maxWaitMs: 1_000 })
        expect(decision).to.include({ allowed: true, reserved: 400 })
        expect(decision.policies?.map((d) => [d.policy, d.remaining])).to.deep.equal([
          ['rpm', 99],
          ['tpm', 9_600],
          ['parallel', 1],
        ])
        expect(await decision.extend?.(5_000)).to.equal(true)
        expect(await limiter.settle(decision, { cost: { tpm: 250 } })).to.include({ outcome: 'settled' })
        expect((await limiter.peek('t')).policies?.map((d) => d.remaining)).to.deep.equal([99, 9_750, 1])
        expect(await limiter.release(decision)).to.deep.equal({ slots: 1, outcome: 'released' })
        expect(await limiter.refund(decision)).to.deep.equal({ units: 250, outcome: 'refunded' })
        expect((await limiter.peek('t')).policies?.map((d) => d.remaining)).to.deep.equal([100, 10_000, 2])
      })
    })
  }

  describe('mistakes and retries (memory store)', () => {
    it("refuses cost: 'estimate' on a limiter without the estimate option, and the option's mistakes", async () => {
      const limiter = createRateLimiter({ limit: 10, window: '1s' })
      const error = await optionErrorOfAsync(() => limiter.consume('t', { cost: 'estimate' }))
      expect(error.message).to.include("`cost: 'estimate'` needs the limiter option `estimate`")
      expect(await optionErrorOfAsync(() => limiter.acquire('t', { cost: 'estimate' }))).to.have.property(
        'option',
        'cost',
      )
      expect(
        optionErrorOf(() => createRateLimiter({ limit: 10, window: '1s', estimate: { initial: 11 } })).option,
      ).to.equal('estimate.initial')
      const limited = createRateLimiter({ limit: 10, window: '1s', estimate: { initial: 2 } })
      expect(
        (await optionErrorOfAsync(() => limited.consume('t', { cost: 'estimate', maxWaitMs: 5 } as never))).message,
      ).to.include('unknown option `options.maxWaitMs`')
    })

    it('the documented bound: a window goes over by at most n × (B − r) with n calls in flight costing at most B', async () => {
      const LIMIT = 100
      const B = 40
      const N = 3
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ admit: fc.boolean(), cost: fc.integer({ min: 1, max: B }), pick: fc.nat() }), {
            maxLength: 60,
          }),
          async (steps) => {
            const limiter = createRateLimiter({
              policies: [
                definePolicy({ name: 'tpm', limit: LIMIT, window: '1h' }),
                definePolicy({ name: 'parallel', concurrency: N }),
              ],
              estimate: { policy: 'tpm', initial: 10, samples: 10 },
              local: false,
            })
            const inFlight: Decision[] = []
            let least = Number.POSITIVE_INFINITY
            let settled = 0
            const end = async (decision: Decision, cost: number) => {
              await limiter.settle(decision, { cost: { tpm: cost } })
              await limiter.release(decision)
              settled += cost
            }
            for (const { admit, cost, pick } of steps) {
              if (admit || inFlight.length === 0) {
                const decision = await limiter.consume('t', { cost: 'estimate' })
                if (!decision.allowed) continue
                inFlight.push(decision)
                least = Math.min(least, decision.reserved as number)
              } else {
                await end(inFlight.splice(pick % inFlight.length, 1)[0] as Decision, cost)
              }
            }
            // The worst outcome: every call still in flight costs its bound.
            for (const decision of inFlight.splice(0)) await end(decision, B)
            if (least === Number.POSITIVE_INFINITY) return
            // One window of an hour: it holds every settled cost.
            expect(settled).to.be.at.most(LIMIT + N * (B - least))
          },
        ),
        { numRuns: 200 },
      )
    })

    it('a settle retried after a timeout is applied once and teaches the estimate once', async () => {
      const base = memoryStore()
      let lose = false
      const store: Store = {
        ...base,
        async settle(requests, id) {
          const result = await base.settle(requests, id)
          // Applied, but the answer never comes: the limiter's deadline ends the call.
          if (lose) await new Promise(() => {})
          return result
        },
      }
      const limiter = createRateLimiter({
        store,
        limit: 10_000,
        window: '1h',
        timeoutMs: 50,
        logger: QUIET,
        estimate: { initial: 100, samples: 10 },
      })
      for (let i = 0; i < 8; i++) await call(limiter, 't', 20)
      const decision = await limiter.consume('t', { cost: 'estimate' })
      lose = true
      const failed = await limiter.settle(decision, { cost: 20 }).then(
        () => 'answered',
        (error: unknown) => (isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE') ? 'timed out' : String(error)),
      )
      expect(failed).to.equal('timed out')
      lose = false
      expect(await limiter.settle(decision, { cost: 20 })).to.deep.equal({ outcome: 'already-settled', overLimit: 0 })
      expect(10_000 - (await limiter.peek('t')).remaining).to.equal(9 * 20)
      expect((await limiter.consume('t', { cost: 'estimate' })).reserved, 'nine costs learned, not ten').to.equal(100)
    })
  })
})

describe('a settle that gives units back wakes the waiters of every process', () => {
  useStoreClients()

  for (const onRedis of [false, true]) {
    it(`${onRedis ? 'redisStore' : 'memoryStore'}: 10,000 concurrent settles each give 1 back; a hostile message on the channel wakes nothing`, async function () {
      this.timeout(60_000)
      const prefix = uniquePrefix()
      const redis = onRedis ? redisClient() : undefined
      try {
        // On one instant, as a burst on Redis lands in a few script runs: 10,000 admissions in one entry, which a
        // settle can reach (past MAX_REFUND_TAIL later entries it answers 'too-deep').
        const store = redis ? redisStore(redis, { prefix }) : memoryStore({ clock: () => 1_000 })
        const options = { store, logger: QUIET, local: false as const, limit: 10_000, window: '1h' as const }
        const settling = createRateLimiter({ ...options, timeoutMs: '20s' })
        const waiting = createRateLimiter(options)
        const admitted = await Promise.all(Array.from({ length: 10_000 }, () => settling.consume('t')))
        expect(admitted.filter((d) => d.allowed)).to.have.length(10_000)
        let done = false
        const waiter = waiting.acquire('t', { cost: 50, maxWaitMs: '2h' }).then((decision) => {
          done = true
          return decision
        })
        await waiting.peek('t')
        await waiting.peek('t')
        // A message on the channel that names no key of ours, 100 KB long: nothing fits, nothing wakes.
        await redis?.publish(`${prefix}:units-back`, 'x'.repeat(100_000))
        await waiting.peek('t')
        expect(done).to.equal(false)
        const settled = await Promise.all(admitted.map((d) => settling.settle(d, { cost: 0 })))
        expect(settled.filter((r) => r.outcome === 'settled')).to.have.length(10_000)
        // Every unit came back: the waiter takes its 50, and the window holds them alone.
        expect(await waiter).to.include({ allowed: true, remaining: 9_950 })
      } finally {
        await redis?.quit()
      }
    })
  }

  for (const kind of storeKinds) {
    it(`${kind.name}: another limiter’s waiter is admitted at once, not when the window slides`, async () => {
      // Two limiters on one store: the second stands for another process, which hears of the settle only from the
      // store (on Redis, its message through the subscriber connection).
      const store = kind.make()
      const options = { store, logger: QUIET, local: false as const, limit: 100, window: '1h' as const }
      const settling = createRateLimiter(options)
      const waiting = createRateLimiter(options)
      const first = await settling.consume('t', { cost: 100 })
      let admitted = false
      const waiter = waiting.acquire('t', { cost: 50, maxWaitMs: '2h' }).then((decision) => {
        admitted = true
        return decision
      })
      // Two store round trips: the waiter was denied and sleeps, for the hour its denial reported.
      await waiting.peek('t')
      await waiting.peek('t')
      expect(admitted).to.equal(false)
      expect(await settling.settle(first, { cost: 40 })).to.include({ outcome: 'settled' })
      expect(await waiter).to.include({ allowed: true, remaining: 10 })
    })
  }
})
