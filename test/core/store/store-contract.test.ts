import { createRateLimiter } from '@fleetlimit/core'
import {
  type Deadline,
  isStore,
  STORE,
  type Store,
  type WindowRequest,
  type WindowResult,
} from '@fleetlimit/core/store'
import { expect } from 'chai'

/**
 * A store written against @fleetlimit/core/store alone, as a user would: a fixed window per key, in a Map. Only
 * what the limiter needs is implemented (no leases, refunds or key-change messages).
 */
function fixedWindowStore(now: () => number) {
  const windows = new Map<string, { start: number; used: number }>()
  const deadlines: (number | undefined)[] = []
  const answer = (request: WindowRequest, record: boolean): WindowResult => {
    const t = now()
    const start = t - (t % request.windowMs)
    let window = windows.get(request.key)
    if (!window || window.start !== start) window = { start, used: 0 }
    const allowed = window.used + request.cost <= request.limit
    if (allowed && record) window.used += request.cost
    windows.set(request.key, window)
    const resetMs = window.used === 0 ? 0 : start + request.windowMs - t
    return {
      allowed,
      remaining: request.limit - window.used,
      retryAfterMs: allowed ? 0 : resetMs,
      resetMs,
      now: t,
    }
  }
  const store: Store = {
    [STORE]: true,
    async consume(requests: readonly WindowRequest[], deadline?: Deadline) {
      deadlines.push(deadline?.at)
      const results = requests.map((request) => answer(request, false))
      if (results.every((result) => result.allowed)) return requests.map((request) => answer(request, true))
      return results
    },
    async peek(requests) {
      return requests.map((request) => answer(request, false))
    },
    async reset(key) {
      windows.delete(key)
    },
    async hold() {},
  }
  return { store, deadlines }
}

describe('the Store contract (@fleetlimit/core/store)', () => {
  it('a store written from the published types alone decides through createRateLimiter', async () => {
    let now = 1_000
    const { store, deadlines } = fixedWindowStore(() => now)
    expect(isStore(store)).to.equal(true)
    const limiter = createRateLimiter({ store, limit: 2, window: '1s', local: false, timeoutMs: 50 })
    const allowed = []
    for (let i = 0; i < 3; i++) allowed.push((await limiter.consume('t')).allowed)
    expect(allowed).to.deep.equal([true, true, false])
    const denied = await limiter.consume('t')
    expect([denied.remaining, denied.retryAfterMs, denied.source]).to.deep.equal([0, 1_000, 'store'])
    now = 2_000
    expect((await limiter.consume('t')).allowed).to.equal(true)
    // A store not made in this process's core is called under the guard: each consume is given a finite deadline.
    expect(deadlines).to.have.length(5)
    expect(deadlines.every((at) => typeof at === 'number' && Number.isFinite(at))).to.equal(true)
  })
})
