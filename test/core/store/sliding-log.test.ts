import { expect } from 'chai'
import fc from 'fast-check'
import { SlidingLog } from '../../../packages/core/src/store/sliding-log.js'
import type { WindowResult } from '../../../packages/core/src/store/store.js'

/** The per-unit log the run-length one replaced: one time per unit, oldest first. The reference for exactness. */
class UnitLog {
  private times: number[] = []

  used(now: number, windowMs: number): number {
    this.times = this.times.filter((time) => time > now - windowMs)
    return this.times.length
  }

  add(time: number, units: number): void {
    const at = this.times.findIndex((t) => t > time)
    this.times.splice(at === -1 ? this.times.length : at, 0, ...Array.from({ length: units }, () => time))
  }

  remove(time: number, count: number): number {
    const first = this.times.indexOf(time)
    if (first === -1) return 0
    let end = first
    while (this.times[end] === time && end - first < count) end++
    this.times.splice(first, end - first)
    return end - first
  }

  result(now: number, limit: number, windowMs: number, cost: number, used: number, recorded: boolean): WindowResult {
    const gone = (time: number | undefined) => Math.ceil((time as number) + windowMs - now)
    const resetMs = this.times.length > 0 ? gone(this.times.at(-1)) : 0
    if (used + cost <= limit) {
      return { allowed: true, remaining: limit - used - (recorded ? cost : 0), retryAfterMs: 0, resetMs, now }
    }
    const retryAfterMs = gone(this.times[used + cost - limit - 1])
    return { allowed: false, remaining: Math.max(0, limit - used), retryAfterMs, resetMs, now }
  }
}

describe('SlidingLog, the memory store’s run-length log', () => {
  it('decides exactly as a log of one entry per unit: leases, returns, merges and a clock that steps back', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('consume' as const), cost: fc.integer({ min: 1, max: 6 }) }),
      fc.record({ kind: fc.constant('lease' as const), units: fc.integer({ min: 1, max: 4 }), ttl: fc.nat(30) }),
      fc.record({ kind: fc.constant('return' as const), pick: fc.nat(), count: fc.integer({ min: 1, max: 4 }) }),
    )
    // Often no time passes, so that admissions share an instant with each other or with a lease's expiry.
    const advance = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 30 }), fc.integer({ min: -20, max: 120 }))
    const step = fc.record({ advance, op })
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 200 }),
        fc.array(step, { maxLength: 300 }),
        (limit, windowMs, steps) => {
          const log = new SlidingLog()
          const reference = new UnitLog()
          const leases: number[] = []
          let now = 1_000
          for (const { advance, op } of steps) {
            now += advance
            const used = log.used(now, windowMs)
            expect(used).to.equal(reference.used(now, windowMs))
            if (op.kind === 'return') {
              const time = leases[op.pick % Math.max(1, leases.length)] ?? now
              expect(log.remove(time, op.count)).to.equal(reference.remove(time, op.count))
              continue
            }
            const [time, cost] =
              op.kind === 'lease' ? [now + op.ttl, Math.min(op.units, limit)] : [now, Math.min(op.cost, limit)]
            const fits = used + cost <= limit
            if (fits) {
              log.add(time, cost)
              reference.add(time, cost)
              if (op.kind === 'lease') leases.push(time)
            }
            const result = log.result(now, limit, windowMs, cost, fits ? used + cost : used, fits)
            expect(result).to.deep.equal(reference.result(now, limit, windowMs, cost, fits ? used + cost : used, fits))
          }
        },
      ),
      { numRuns: 300 },
    )
  })
})
