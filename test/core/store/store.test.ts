import { createRateLimiter, memoryStore } from '@fleetlimit/core'
import {
  type Deadline,
  isStore,
  STORE,
  type Store,
  type StorePlan,
  type WindowRequest,
  type WindowResult,
} from '@fleetlimit/core/store'
import { rateLimit as expressRateLimit } from '@fleetlimit/express'
import { expect } from 'chai'
import { keysGivenBack } from '../../../packages/core/src/store/store.js'
import { optionErrorOf } from '../../support/option-error.js'

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
  /** Records every request's cost only if each has room. */
  const decide = (requests: readonly WindowRequest[]) => {
    const results = requests.map((request) => answer(request, false))
    if (results.every((result) => result.allowed)) return requests.map((request) => answer(request, true))
    return results
  }
  const store: Store = {
    [STORE]: true,
    async consume(requests: readonly WindowRequest[], deadline?: Deadline) {
      deadlines.push(deadline?.at)
      return decide(requests)
    },
    async peek(requests) {
      return requests.map((request) => answer(request, false))
    },
    async reset(key) {
      windows.delete(key)
    },
    async hold() {},
  }
  return { store, deadlines, decide }
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

describe('the Store contract: plans', () => {
  /** The fixed-window store, compiling a plan per key: what it was asked, in order. */
  function planningStore(kind: 'decide' | 'decideNow') {
    const { store, decide } = fixedWindowStore(() => 1_000)
    const asked: string[] = []
    const deadlines: (number | undefined)[] = []
    const consume = store.consume.bind(store)
    const planned: Store = {
      ...store,
      consume(requests, deadline) {
        asked.push('consume')
        return consume(requests, deadline)
      },
      plan(requests) {
        asked.push(`plan ${requests.map((r) => r.key).join(' ')}`)
        return { requests }
      },
    }
    if (kind === 'decide') {
      planned.decide = (plan, deadline) => {
        asked.push('decide')
        deadlines.push(deadline?.at)
        return consume(plan.requests, deadline)
      }
    } else {
      planned.decideNow = (plan: StorePlan) => {
        asked.push('decideNow')
        return decide(plan.requests)
      }
    }
    return { store: planned, asked, deadlines }
  }

  it('a store that compiles plans is asked for one per key, then decides each call of the key from it', async () => {
    const { store, asked, deadlines } = planningStore('decide')
    const limiter = createRateLimiter({ store, limit: 2, window: '1s', local: false, timeoutMs: 50 })
    const allowed = []
    for (let i = 0; i < 3; i++) allowed.push((await limiter.consume('t')).allowed)
    allowed.push((await limiter.consume('u')).allowed)
    expect(allowed).to.deep.equal([true, true, false, true])
    expect(asked.map((what) => what.replace(/ \S+\{(\w+)\}\S*/, ' $1'))).to.deep.equal([
      'plan t',
      'decide',
      'decide',
      'decide',
      'plan u',
      'decide',
    ])
    // Under the guard, as consume is: each decide is given a finite deadline.
    expect(deadlines.every((at) => typeof at === 'number' && Number.isFinite(at))).to.equal(true)
  })

  it('a call at another cost than its key’s plan gets a plan of its own, not the kept one', async () => {
    const { store, asked } = planningStore('decide')
    const limiter = createRateLimiter({ store, limit: 5, window: '1s', local: false })
    await limiter.consume('t')
    await limiter.consume('t', { cost: 3 })
    await limiter.consume('t')
    expect(asked.map((what) => what.replace(/ \S+\{(\w+)\}\S*/, ' $1'))).to.deep.equal([
      'plan t',
      'decide',
      'plan t',
      'decide',
      'decide',
    ])
  })

  it('a store that answers at once (decideNow) decides in the same tick, and is never given a deadline', async () => {
    const { store, asked } = planningStore('decideNow')
    const limiter = createRateLimiter({ store, limit: 1, window: '1s', local: false, timeoutMs: 50 })
    const first = limiter.consume('t')
    expect(
      asked.map((what) => what.replace(/ \S+\{(\w+)\}\S*/, ' $1')),
      'decided before the promise settles',
    ).to.deep.equal(['plan t', 'decideNow'])
    expect((await first).allowed).to.equal(true)
    expect((await limiter.consume('t')).allowed).to.equal(false)
    expect(asked).to.not.include('consume')
  })

  it('a copy of memoryStore with its consume replaced decides through that consume', async () => {
    const store = memoryStore()
    let consumed = 0
    const copy: Store = {
      ...store,
      consume(requests, deadline) {
        consumed++
        return store.consume(requests, deadline)
      },
    }
    const limiter = createRateLimiter({ store: copy, limit: 2, window: '1s' })
    for (let i = 0; i < 3; i++) await limiter.consume('t')
    expect(consumed).to.equal(3)
    expect(typeof store.decideNow, 'the store itself decides at once').to.equal('function')
  })
})

describe('a store that does not keep the contract is refused at construction', () => {
  const complete = () => fixedWindowStore(() => 0).store

  it('a store with the brand but not its methods names the first one missing', () => {
    const store = { [STORE]: true, consume() {} }
    const error = optionErrorOf(() => createRateLimiter({ store: store as never, limit: 5, window: '1m' }))
    expect(error.option).to.equal('store')
    expect(error.message).to.equal(
      'fleetlimit: invalid option `store`: got an object; expected a store that keeps the store contract v1 of ' +
        '@fleetlimit/core/store: it has no `peek` method (a store has consume, peek, reset and hold; plan, ' +
        'decide, decideNow, lease, release, refund, free, extend, settle, onUnitsBack, onSlotFree, readNote, writeNote, ' +
        'isConnected, readySince, lastError and onKeyChange ' +
        'are optional, and functions when given).',
    )
  })

  it("an optional method that is not a function is named, and so is each adapter's store", () => {
    const store = { ...complete(), refund: true }
    const error = optionErrorOf(() => createRateLimiter({ store: store as never, limit: 5, window: '1m' }))
    expect(error.message).to.include('it has `refund`, which is not a function (got true)')
    const fromAdapter = optionErrorOf(() =>
      expressRateLimit({ store: { [STORE]: true, consume() {}, peek() {} } as never, limit: 5, window: '1m' }),
    )
    expect(fromAdapter.message).to.include('it has no `reset` method')
  })

  for (const version of [2, 0]) {
    it(`a store of contract v${version} is refused, saying which versions to match`, () => {
      const { [STORE]: _, ...methods } = complete()
      const store = { ...methods, [Symbol.for(`fleetlimit.store.v${version}`)]: true }
      const error = optionErrorOf(() => createRateLimiter({ store: store as never, limit: 5, window: '1m' }))
      expect(error.option).to.equal('store')
      expect(error.message).to.equal(
        `fleetlimit: invalid option \`store\`: got an object; expected a store of contract v1: this store ` +
          `implements contract v${version}; this @fleetlimit/core speaks v1: install matching versions of ` +
          '@fleetlimit/core and of the package that made the store.',
      )
    })
  }

  it('a store of two versions is taken by the one this core speaks', async () => {
    const store = { ...complete(), [Symbol.for('fleetlimit.store.v2')]: true }
    const limiter = createRateLimiter({ store, limit: 5, window: '1m', local: false })
    expect((await limiter.consume('t')).remaining).to.equal(4)
  })
})

describe('keysGivenBack', () => {
  const requests = [
    { key: 'a', windowMs: 1_000, recorded: 1, delta: -5 },
    { key: 'b', windowMs: 1_000, recorded: 1, delta: 3 },
    { key: 'c', windowMs: 1_000, recorded: 1, delta: -1 },
  ]
  it('names the windows a settle gave units back on, once it is settled, and none otherwise', () => {
    expect(keysGivenBack(requests, { outcome: 'settled', used: [0, 3, 0] })).to.deep.equal(['a', 'c'])
    for (const outcome of ['expired', 'already-settled', 'too-deep', 'refunded'] as const) {
      expect(keysGivenBack(requests, { outcome, used: [] }), outcome).to.deep.equal([])
    }
  })
})
