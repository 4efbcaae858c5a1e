import { expect } from 'chai'
import fc from 'fast-check'
import type { Redis } from 'ioredis'
import { memoryStore } from '../../../packages/core/src/store/memory-store.js'
import { createScriptRunner } from '../../../packages/core/src/store/script-runner.js'
import { slidingLogScript } from '../../../packages/core/src/store/scripts.generated.js'
import { costWindowsCall, readSlidingLog, windowsCall } from '../../../packages/core/src/store/sliding-log-call.js'
import type { WindowRequest } from '../../../packages/core/src/store/store.js'
import { redisClient, uniquePrefix } from '../../support/redis.js'
import { withTestClock } from '../../support/test-clock-script.js'

// Share windows (the script's flag 8, a priority class's share of a limit) on lua/sliding-log.lua and on the memory
// store's twin, on one clock that moves in whole ms: every reply field of every call must be equal, and each
// step's expected figures follow from the rules (records always, enforced only while held).

const steps = fc.array(
  fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant('call' as const),
        advance: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 400 })),
        cls: fc.constantFrom(0 as const, 1 as const),
        cost: fc.integer({ min: 1, max: 5 }),
        peek: fc.boolean(),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('hold' as const),
        advance: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 400 })),
        cls: fc.constantFrom(0 as const, 1 as const),
        ms: fc.integer({ min: 1, max: 1_500 }),
      }),
    },
  ),
  { minLength: 40, maxLength: 120 },
)

describe('share windows: lua/sliding-log.lua and the memory store decide alike (fast-check, one clock in ms)', () => {
  let redis: Redis
  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())

  const script = withTestClock(slidingLogScript)

  it('every reply field is equal, a held share admits exactly its limit, and an unheld one never denies', async function () {
    this.timeout(120_000)
    const runner = createScriptRunner(redis)
    let nowMs = 0
    let compared = 0
    let heldDenials = 0
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 20 }),
        fc.integer({ min: 1, max: 1_000 }),
        fc.double({ min: 0.05, max: 0.95, noNaN: true }),
        steps,
        async (limit, windowMs, share, schedule) => {
          const tag = `{${uniquePrefix()}}`
          const main = `${tag}:main`
          const shares = [`${tag}:main~p0`, `${tag}:main~p1`] as const
          const limits = [Math.floor(share * limit), limit - Math.floor(share * limit)]
          const store = memoryStore({ clock: () => nowMs })
          // What each class has admitted, and until when each share key is held (ms), for the expected figures.
          const admitted: [number, 0 | 1, number][] = []
          const heldUntil = [0, 0]
          nowMs = 1_000_000
          for (const given of schedule) {
            // A limiter never asks for more than the policy's limit.
            const step = given.kind === 'call' ? { ...given, cost: Math.min(given.cost, limit) } : given
            nowMs += step.advance
            const clock = [String(Math.floor(nowMs / 1000)), String((nowMs % 1000) * 1000)]
            if (step.kind === 'hold') {
              const hold = [{ key: shares[step.cls], windowMs }]
              await store.hold(hold, step.ms)
              const bytes = windowsCall('z', step.ms, [{ limit: 0, windowMs }])
              await runner.runBuffer(script, [shares[step.cls]], [bytes, ...clock])
              heldUntil[step.cls] = Math.max(heldUntil[step.cls] as number, nowMs + step.ms)
              continue
            }
            const requests: WindowRequest[] = [
              { key: main, limit, windowMs, cost: step.cost },
              { key: shares[step.cls], limit: limits[step.cls] as number, windowMs, cost: step.cost, share: true },
            ]
            const mode = step.peek ? 'peek' : 'consume'
            const lua = readSlidingLog(
              await runner.runBuffer(script, [main, shares[step.cls]], [costWindowsCall(mode, requests), ...clock]),
              2,
            )
            const memory = step.peek ? await store.peek(requests) : await store.consume(requests)
            const fields = (w: { allowed: boolean; remaining: number; retryAfterMs: number; resetMs: number }) => ({
              allowed: w.allowed,
              remaining: w.remaining,
              retryAfterMs: w.retryAfterMs,
              resetMs: w.resetMs,
            })
            const what = `step ${compared} at ${nowMs} ms: ${JSON.stringify(step)}`
            expect(lua.windows.map(fields), what).to.deep.equal(memory.map(fields))
            expect(lua.status === 1, `${what}: the call's status`).to.equal(memory.every((r) => r.allowed))
            // The share window's own rule, from the class's units admitted in the window (the model).
            const used = admitted
              .filter(([at, cls]) => cls === step.cls && at > nowMs - windowMs)
              .reduce((sum, [, , units]) => sum + units, 0)
            const shareResult = memory[1] as { allowed: boolean; retryAfterMs: number }
            const held = (heldUntil[step.cls] as number) > nowMs
            const fits = used + step.cost <= (limits[step.cls] as number)
            expect(shareResult.allowed, `${what}: held ${held}, ${used} used`).to.equal(!held || fits)
            if (held && !fits) {
              heldDenials++
              expect(shareResult.retryAfterMs, `${what}: at most the hold's end`).to.be.at.most(
                (heldUntil[step.cls] as number) - nowMs,
              )
            }
            if (!step.peek && lua.status === 1) admitted.push([nowMs, step.cls, step.cost])
            compared++
          }
          await redis.del(main, ...shares)
        },
      ),
      { numRuns: 80 },
    )
    expect(compared, 'calls compared').to.be.greaterThan(2_000)
    expect(heldDenials, 'denials by a held share').to.be.greaterThan(50)
  })
})
