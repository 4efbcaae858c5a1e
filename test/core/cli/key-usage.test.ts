import { expect } from 'chai'
import { isEmpty, nextOfPeriod, periodUsageOf, usageOf, windowOf } from '../../../packages/core/src/cli/key-usage.js'
import type { ReadWindow } from '../../../packages/core/src/cli/read-window.js'
import { MAX_LIMIT } from '../../../packages/core/src/limiter/policy.js'
import type { WindowRequest, WindowResult } from '../../../packages/core/src/store/store.js'

/** A read that answers from `answer` and keeps the limits it was asked under. */
function reads(answer: (request: WindowRequest) => WindowResult) {
  const limits: number[] = []
  const read: ReadWindow = async (request) => {
    limits.push(request.limit)
    return answer(request)
  }
  return { read, limits }
}

describe('cli/key-usage', () => {
  it('windowOf asks one unit of the policy’s key, with its buckets or slots', () => {
    expect(windowOf('api~sl3-60000:{t}', { name: 'api', window: 60_000, algorithm: 'sliding-log' })).to.deep.equal({
      key: 'api~sl3-60000:{t}',
      limit: MAX_LIMIT,
      windowMs: 60_000,
      cost: 1,
    })
    expect(windowOf('k', { name: 'day', window: 86_400_000, algorithm: 'bucketed', buckets: 24 })).to.deep.equal({
      key: 'k',
      limit: MAX_LIMIT,
      windowMs: 86_400_000,
      cost: 1,
      buckets: 24,
    })
    expect(windowOf('k', { name: 'jobs', window: 30_000, algorithm: 'sliding-log', inFlight: true })).to.deep.equal({
      key: 'k',
      limit: MAX_LIMIT,
      windowMs: 30_000,
      cost: 1,
      slots: true,
    })
  })

  it('usageOf reads a window under the largest limit: the units used, the reset, and a pause', async () => {
    const { read, limits } = reads(() => ({
      allowed: false,
      remaining: MAX_LIMIT - 7,
      retryAfterMs: 4_000,
      resetMs: 900,
      now: 0,
    }))
    const usage = await usageOf(read, windowOf('k', { name: 'api', window: 1_000, algorithm: 'sliding-log' }))
    expect(usage).to.deep.equal({ used: 7, resetMs: 900, pausedMs: 4_000 })
    expect(limits).to.deep.equal([MAX_LIMIT])
    expect(isEmpty(usage)).to.equal(false)
  })

  it('usageOf of slots reads again under a limit of the slots held, for the soonest end', async () => {
    const { read, limits } = reads((request) =>
      request.limit === MAX_LIMIT
        ? { allowed: true, remaining: MAX_LIMIT - 2, retryAfterMs: 0, resetMs: 5_000, now: 0 }
        : { allowed: false, remaining: 0, retryAfterMs: 1_200, resetMs: 5_000, now: 0 },
    )
    const slots = windowOf('k', { name: 'jobs', window: 30_000, algorithm: 'sliding-log', inFlight: true })
    expect(await usageOf(read, slots)).to.deep.equal({ used: 2, resetMs: 5_000, pausedMs: 0, nextSlotEndMs: 1_200 })
    expect(limits).to.deep.equal([MAX_LIMIT, 2])
  })

  it('an empty key reads as empty, with no second read for slots', async () => {
    const { read, limits } = reads(() => ({ allowed: true, remaining: MAX_LIMIT, retryAfterMs: 0, resetMs: 0, now: 0 }))
    const slots = windowOf('k', { name: 'jobs', window: 30_000, algorithm: 'sliding-log', inFlight: true })
    const usage = await usageOf(read, slots)
    expect(usage).to.deep.equal({ used: 0, resetMs: 0, pausedMs: 0, nextSlotEndMs: 0 })
    expect(isEmpty(usage)).to.equal(true)
    expect(limits).to.deep.equal([MAX_LIMIT])
  })
})

/** A calendar key's value: its period's start and end, its count and its hold, in ms (stored as µs). */
function periodValue(start: number, end: number, count: number, hold = 0): Buffer {
  const value = Buffer.alloc(32)
  for (const [i, n] of [start * 1000, end * 1000, count, hold * 1000].entries()) value.writeDoubleBE(n, i * 8)
  return value
}

describe('cli/key-usage: a calendar key', () => {
  // Auckland's day of 2026-12-07 (+13:00): from 2026-12-06T11:00Z to 2026-12-07T11:00Z.
  const start = Date.UTC(2026, 11, 6, 11)
  const end = start + 86_400_000
  const daily = { unit: 'day' as const, timeZone: 'Pacific/Auckland' }

  it('counts its units while its period is current, until the period ends', () => {
    const nowUs = (end - 4_000_000) * 1000 + 500
    const usage = periodUsageOf({ value: periodValue(start, end, 2), nowUs })
    expect(usage).to.deep.equal({ used: 2, resetMs: 4_000_000, pausedMs: 0, period: { start, end } })
    expect(nextOfPeriod(usage, 3, nowUs)).to.deep.equal({
      allowed: true,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: 4_000_000,
      now: nowUs / 1000,
    })
    // At the limit, the next call waits until the period ends (rounded up).
    expect(nextOfPeriod(usage, 2, nowUs)).to.deep.include({ allowed: false, remaining: 0, retryAfterMs: 4_000_000 })
  })

  it('a held key: paused until its hold ends, and a call denied that long, or to the period’s end if later', () => {
    const nowUs = (start + 1_000) * 1000
    const usage = periodUsageOf({ value: periodValue(start, end, 1, start + 61_000), nowUs })
    expect(usage).to.deep.equal({ used: 1, resetMs: 86_399_000, pausedMs: 60_000, period: { start, end } })
    expect(nextOfPeriod(usage, 3, nowUs)).to.deep.include({ allowed: false, remaining: 2, retryAfterMs: 60_000 })
    expect(nextOfPeriod(usage, 1, nowUs)).to.deep.include({ allowed: false, retryAfterMs: 86_399_000 })
  })

  it('a count of a period that has ended is 0: the period is the calendar’s, or none without one', () => {
    const nowUs = (end + 5_000) * 1000
    const value = periodValue(start, end, 3, end + 65_000)
    expect(periodUsageOf({ value, nowUs })).to.deep.equal({ used: 0, resetMs: 0, pausedMs: 60_000, period: undefined })
    expect(periodUsageOf({ value, nowUs }, daily)).to.deep.equal({
      used: 0,
      resetMs: 0,
      pausedMs: 60_000,
      period: { start: end, end: end + 86_400_000 },
    })
  })

  it('no key: nothing used, nothing held, the period by the calendar (its anchor)', () => {
    const nowUs = Date.UTC(2026, 11, 20, 12) * 1000
    const monthly = { unit: 'month' as const, timeZone: 'Europe/Berlin', anchor: 15 }
    const usage = periodUsageOf({ value: null, nowUs }, monthly)
    // Berlin's 15th at midnight, +01:00 in winter.
    expect(usage).to.deep.equal({
      used: 0,
      resetMs: 0,
      pausedMs: 0,
      period: { start: Date.UTC(2026, 11, 14, 23), end: Date.UTC(2027, 0, 14, 23) },
    })
    expect(nextOfPeriod(usage, 5, nowUs)).to.deep.include({ allowed: true, remaining: 5, retryAfterMs: 0 })
  })
})
