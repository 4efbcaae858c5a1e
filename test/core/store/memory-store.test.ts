import { memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'
import fc from 'fast-check'
import type { StorePlan, WindowResult } from '../../../packages/core/src/store/store.js'

interface Admission {
  readonly at: number
  readonly cost: number
}

/** Units admitted in the window (t - window, t], by the naive definition. */
const usedAt = (admissions: readonly Admission[], t: number, windowMs: number) =>
  admissions.filter((a) => a.at > t - windowMs && a.at <= t).reduce((sum, a) => sum + a.cost, 0)

describe('memoryStore model (fast-check, injected clock)', () => {
  it('never holds more than the limit in any window, and every denial’s wait is exact', () => {
    const call = fc.record({
      advance: fc.integer({ min: 0, max: 300 }),
      cost: fc.integer({ min: 1, max: 8 }),
      peek: fc.boolean(),
    })
    fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 500 }),
        fc.array(call, { maxLength: 60 }),
        async (limit, windowMs, calls) => {
          let now = 1_000_000
          const store = memoryStore({ clock: () => now })
          const admissions: Admission[] = []
          for (const { advance, cost: rawCost, peek } of calls) {
            now += advance
            const cost = Math.min(rawCost, limit)
            const request = { key: 'k', limit, windowMs, cost }
            const used = usedAt(admissions, now, windowMs)
            const [result] = (peek ? await store.peek([request]) : await store.consume([request])) as [WindowResult]
            expect(result.allowed).to.equal(used + cost <= limit)
            if (result.allowed) {
              expect(result.remaining).to.equal(peek ? limit - used : limit - used - cost)
              if (!peek) admissions.push({ at: now, cost })
              continue
            }
            expect(result.remaining).to.equal(Math.max(0, limit - used))
            // The exact wait: the first whole ms at which this cost would fit, nothing else consumed.
            let wait = 1
            while (usedAt(admissions, now + wait, windowMs) + cost > limit) wait++
            expect(result.retryAfterMs).to.equal(wait)
          }
          for (const { at } of admissions) expect(usedAt(admissions, at, windowMs)).to.be.at.most(limit)
        },
      ),
      { numRuns: 300 },
    )
  })

  it('keeps its log in time order when an injected clock steps back: a unit never counts for less than a window', async () => {
    let now = 10_000
    const store = memoryStore({ clock: () => now })
    const request = { key: 'k', limit: 3, windowMs: 1_000, cost: 1 }
    await store.consume([request])
    now = 9_500
    await store.consume([request])
    now = 10_999
    // The unit admitted at 9 500 was recorded at 10 000, the newest time, as lua/sliding-log.lua records it.
    expect((await store.consume([request]))[0]).to.include({ allowed: true, remaining: 0 })
    now = 11_000
    expect((await store.peek([request]))[0]).to.include({ allowed: true, remaining: 2 })
  })

  it('takes an injected clock’s step forward for time passed, and after a step back admits nothing more', async () => {
    let now = 10_000
    const store = memoryStore({ clock: () => now })
    const request = { key: 'k', limit: 5, windowMs: 2_000, cost: 5 }
    expect((await store.consume([request]))[0]?.allowed).to.equal(true)
    now += 3_600_000
    // As documented: a monotonic clock is the caller's to give; a forward step is a window gone by.
    expect((await store.consume([request]))[0]?.allowed).to.equal(true)
    now -= 3_600_000
    expect((await store.consume([{ ...request, cost: 1 }]))[0]).to.include({ allowed: false, retryAfterMs: 3_602_000 })
  })

  it('sweeps idle keys, explicitly and on a later call', async () => {
    let now = 0
    const store = memoryStore({ clock: () => now, sweepIntervalMs: 5_000 })
    for (let i = 0; i < 1_000; i++) await store.consume([{ key: `k${i}`, limit: 5, windowMs: 1_000, cost: 1 }])
    expect(store.size).to.equal(1_000)
    now = 999
    expect(store.sweep()).to.equal(0)
    now = 1_000
    expect(store.sweep()).to.equal(1_000)
    expect(store.size).to.equal(0)

    for (let i = 0; i < 100; i++) await store.consume([{ key: `k${i}`, limit: 5, windowMs: 1_000, cost: 1 }])
    now = 7_000
    await store.consume([{ key: 'fresh', limit: 5, windowMs: 1_000, cost: 1 }])
    expect(store.size, 'the call past sweepIntervalMs swept the idle keys').to.equal(1)
  })
  it('answers one window exactly as a call of two windows answers it beside a window with room (fast path)', async () => {
    const step = fc.record({
      advance: fc.integer({ min: 0, max: 400 }),
      kind: fc.constantFrom('consume', 'consume', 'consume', 'peek', 'hold', 'reset'),
      cost: fc.integer({ min: 1, max: 6 }),
      limit: fc.integer({ min: 6, max: 9 }),
      block: fc.constantFrom(undefined, 250),
    })
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 80 }), async (steps) => {
        let now = 0
        const one = memoryStore({ clock: () => now })
        const two = memoryStore({ clock: () => now })
        for (const { advance, kind, cost, limit, block } of steps) {
          now += advance
          const request = { key: 'k', limit, windowMs: 1_000, cost, ...(block !== undefined && { blockMs: block }) }
          const roomy = { key: 'roomy', limit: 1_000_000, windowMs: 1_000, cost }
          if (kind === 'hold') {
            await Promise.all([one.hold([request], 300), two.hold([request], 300)])
          } else if (kind === 'reset') {
            await Promise.all([one.reset('k'), two.reset('k')])
          } else {
            const call = kind === 'peek' ? 'peek' : 'consume'
            const [alone] = await one[call]([request])
            const [beside] = await two[call]([request, roomy])
            expect(alone, `${kind} at ${now}`).to.deep.equal(beside)
          }
        }
      }),
      { numRuns: 300 },
    )
  })
  it('answers a call through a kept entry slot as a plain call answers it, across resets, holds and sweeps', async () => {
    const step = fc.record({
      advance: fc.integer({ min: 0, max: 700 }),
      kind: fc.constantFrom('consume', 'consume', 'consume', 'peek', 'hold', 'reset', 'sweep'),
      cost: fc.integer({ min: 1, max: 6 }),
      limit: fc.integer({ min: 6, max: 9 }),
    })
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 80 }), async (steps) => {
        let now = 0
        const kept = memoryStore({ clock: () => now })
        const plain = memoryStore({ clock: () => now })
        // One plan per limit and cost, each kept across every step: the entry of the key it holds goes stale on a
        // reset, a sweep or an idle drop.
        const plans = new Map<string, StorePlan>()
        for (const { advance, kind, cost, limit } of steps) {
          now += advance
          const request = { key: 'k', limit, windowMs: 1_000, cost }
          if (kind === 'hold') {
            await Promise.all([kept.hold([request], 300), plain.hold([request], 300)])
          } else if (kind === 'reset') {
            await Promise.all([kept.reset('k'), plain.reset('k')])
          } else if (kind === 'sweep') {
            expect(kept.sweep()).to.equal(plain.sweep())
          } else if (kind === 'peek') {
            expect(await kept.peek([request]), `peek at ${now}`).to.deep.equal(await plain.peek([request]))
          } else {
            const expected = await plain.consume([request])
            let plan = plans.get(`${limit} ${cost}`)
            if (plan === undefined) {
              plan = kept.plan([request])
              plans.set(`${limit} ${cost}`, plan)
            }
            expect(kept.decideNow(plan), `consume at ${now}`).to.deep.equal(expected)
          }
          expect(kept.size, `keys held at ${now}`).to.equal(plain.size)
        }
      }),
      { numRuns: 300 },
    )
  })
})
