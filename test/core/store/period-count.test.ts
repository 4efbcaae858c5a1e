import { expect } from 'chai'
import { PeriodCount } from '../../../packages/core/src/store/period-count.js'

const day = { start: 86_400_000, end: 2 * 86_400_000 }
const nextDay = { start: 2 * 86_400_000, end: 3 * 86_400_000 }

describe('PeriodCount (store/period-count.ts)', () => {
  it('counts the units of its period, and starts over at 0 in another', () => {
    const count = new PeriodCount()
    expect(count.used(day)).to.equal(0)
    count.add(day, 2)
    count.add(day, 1)
    expect(count.used(day)).to.equal(3)
    expect(count.used(nextDay)).to.equal(0)
    count.add(nextDay, 1)
    expect([count.start, count.end, count.count]).to.deep.equal([nextDay.start, nextDay.end, 1])
    expect(count.used(day)).to.equal(0)
  })

  it('answers with the wait and the reset to the next period start, exactly', () => {
    const count = new PeriodCount()
    const now = day.end - 1_500.5
    expect(count.result(now, day, 3, 2, 1, true)).to.deep.equal({
      allowed: true,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 1_501,
      now,
    })
    expect(count.result(now, day, 3, 2, 3, false)).to.deep.equal({
      allowed: false,
      remaining: 0,
      retryAfterMs: 1_501,
      resetMs: 1_501,
      now,
    })
    // Nothing counted: nothing to reset.
    expect(count.result(now, day, 3, 1, 0, false)).to.include({ allowed: true, remaining: 3, resetMs: 0 })
  })

  it('is empty with no unit, or once its period has ended', () => {
    const count = new PeriodCount()
    expect(count.isEmpty(day.start)).to.equal(true)
    count.add(day, 1)
    expect(count.isEmpty(day.end - 1)).to.equal(false)
    expect(count.isEmpty(day.end)).to.equal(true)
  })

  it('moves the count only for units recorded in its period while it lasts, never below 0', () => {
    const count = new PeriodCount()
    count.add(day, 3)
    expect(count.adjust(day.start + 10, -2, day.start + 20)).to.equal(-2)
    expect(count.used(day)).to.equal(1)
    expect(count.adjust(day.start + 10, -5, day.start + 20), 'at most what it holds').to.equal(-1)
    expect(count.used(day)).to.equal(0)
    expect(count.adjust(day.start + 10, 4, day.start + 20)).to.equal(4)
    expect(count.adjust(day.start - 1, -1, day.start + 20), 'recorded in the period before').to.equal(0)
    expect(count.adjust(day.start + 10, -1, day.end), 'after the period ended').to.equal(0)
    expect(count.used(day)).to.equal(4)
    expect(count.holds(day.start, day.start)).to.equal(true)
    expect(count.holds(day.end, day.start)).to.equal(false)
  })
})
