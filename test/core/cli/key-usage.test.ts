import { expect } from 'chai'
import { isEmpty, usageOf, windowOf } from '../../../packages/core/src/cli/key-usage.js'
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
