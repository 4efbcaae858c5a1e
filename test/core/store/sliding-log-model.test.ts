import { expect } from 'chai'
import fc from 'fast-check'
import { memoryStore } from '../../../packages/core/src/store/memory-store.js'
import {
  compareWithModel,
  type ModelSubject,
  modelPair,
  modelSteps,
  modelWindows,
} from '../../support/sliding-log-model.js'

// The memory store against the same reference model as lua/sliding-log.lua, on an injected clock. Its times are
// ms (doubles), so the clock moves in whole ms here: µs fractions of a ms would round differently at an exit.
describe('memoryStore against the reference model of a sliding-window log (fast-check, injected clock)', () => {
  it('every reply field is exact: consume, peek, two windows at once, leases, releases, same-instant calls, exits ±1 ms', async function () {
    this.timeout(60_000)
    let nowUs = 0
    const store = memoryStore({ clock: () => nowUs / 1000 })
    const window = ({
      allowed,
      remaining,
      retryAfterMs,
      resetMs,
    }: {
      allowed: boolean
      remaining: number
      retryAfterMs: number
      resetMs: number
    }) => ({ allowed, remaining, retryAfterMs, resetMs })
    const subject: ModelSubject = {
      setNow(us) {
        nowUs = us
      },
      async decide(windows, cost, peek) {
        const requests = windows.map((w) => ({ ...w, cost }))
        return (peek ? await store.peek(requests) : await store.consume(requests)).map(window)
      },
      async lease(key, limit, windowMs, want, ttlMs) {
        const result = await store.lease({ key, limit, windowMs, want, min: 1, waitFor: 1, ttlMs })
        return { granted: result.lease.granted, scoreUs: result.lease.score * 1000, window: window(result) }
      },
      async release(key, windowMs, atUs, units) {
        await store.release(key, { windowMs, score: atUs / 1000, granted: units, recorded: atUs / 1000 }, units)
        return undefined
      },
    }
    let compared = 0
    let run = 0
    await fc.assert(
      fc.asyncProperty(modelPair(), modelWindows(), modelSteps(300), async (limits, windowsMs, steps) => {
        run++
        const keys = [`{r${run}}:a`, `{r${run}}:b`] as const
        compared += await compareWithModel(subject, keys, limits, windowsMs, steps, 1000, (actual, expected, what) =>
          expect(actual, what).to.deep.equal(expected),
        )
      }),
      { numRuns: 100 },
    )
    expect(compared, 'decisions checked against the model').to.be.greaterThan(10_000)
  })
})
