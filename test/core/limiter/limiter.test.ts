import {
  createRateLimiter,
  type Decision,
  definePolicy,
  isFleetlimitError,
  memoryStore,
  type OptionError,
  type Store,
  type StoreError,
} from '@fleetlimit/core'
import { expect } from 'chai'
import sinon from 'sinon'
import { createServerSet, guardStore } from '../../../packages/core/src/store/server-set.js'
import { optionErrorOf } from '../../support/option-error.js'

/** A memory store behind a server set whose live 'open' and 'close' subscriptions are counted. */
function countedServers() {
  const servers = createServerSet({ breaker: { failureThreshold: 1 } })
  const live = { open: 0, close: 0 }
  const on = servers.on
  sinon.stub(servers, 'on').callsFake((event, listener) => {
    live[event]++
    const off = on(event, listener)
    return () => {
      live[event]--
      off()
    }
  })
  const store: Store = guardStore({ ...memoryStore() }, servers)
  return { store, servers, live }
}

describe('limiter events', () => {
  it('forwards breaker events only while someone listens: unsubscribing leaves the store no hold on the limiter', () => {
    const { store, servers, live } = countedServers()
    const limiter = createRateLimiter({ store, limit: 5, window: '1m' })
    const opened: string[] = []
    const offs = [
      limiter.on('breakerOpen', () => opened.push('a')),
      limiter.on('breakerOpen', () => opened.push('b')),
      limiter.on('breakerClose', () => {}),
    ]
    expect(live).to.deep.equal({ open: 1, close: 1 })
    servers.for('k').breaker.failure()
    expect(opened).to.deep.equal(['a', 'b'])
    for (const off of offs) off()
    expect(live).to.deep.equal({ open: 0, close: 0 })

    // Listening again subscribes again; an unsubscribe called twice takes nothing more.
    const again = limiter.on('breakerOpen', () => opened.push('c'))
    offs[0]?.()
    expect(live).to.deep.equal({ open: 1, close: 0 })
    again()
    expect(live).to.deep.equal({ open: 0, close: 0 })
  })
})

describe('decisions on the memory store', () => {
  afterEach(() => sinon.restore())

  it('set no timer: an in-process store cannot hang, so its calls get no deadline', async () => {
    const limiter = createRateLimiter({ store: memoryStore(), limit: 2, window: '1m', local: false })
    const setTimeoutSpy = sinon.spy(globalThis, 'setTimeout')
    const decisions = [await limiter.consume('t'), await limiter.consume('t'), await limiter.consume('t')]
    expect(decisions.map((d) => d.allowed)).to.deep.equal([true, true, false])
    expect(await limiter.peek('t')).to.include({ allowed: false, remaining: 0 })
    expect(setTimeoutSpy.callCount).to.equal(0)
    expect(limiter.stats()).to.include({ storeCalls: 4, decisions: 3 })
  })

  it('a copy of a memory store with a method replaced keeps its deadline', async () => {
    const clock = sinon.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'performance'] })
    const hanging: Store = { ...memoryStore(), consume: () => new Promise(() => {}) }
    const limiter = createRateLimiter({ store: hanging, limit: 2, window: '1m', timeoutMs: 50, logger: { warn() {} } })
    const outcome = limiter.consume('t').then(
      () => 'admitted',
      (error: Error) => error.message,
    )
    await clock.tickAsync(60)
    expect(await outcome).to.match(/no answer within timeoutMs \(50 ms\)/)
    expect(limiter.stats()).to.include({ storeCalls: 1, timeouts: 1 })
  })
  it('keeps each tenant its own window past the tenants whose keys it keeps built (16,384)', async () => {
    const limiter = createRateLimiter({ store: memoryStore(), limit: 1, window: '1m', local: false })
    const tenants = Array.from({ length: 16_384 + 2 }, (_, i) => `t${i}`)
    for (const tenant of tenants) expect((await limiter.consume(tenant)).allowed, tenant).to.equal(true)
    for (const tenant of [tenants[0], tenants[1], tenants.at(-1)] as string[]) {
      expect(await limiter.consume(tenant), tenant).to.include({ allowed: false, remaining: 0 })
    }
    expect(await limiter.consume({ tenant: 't0' }), 'the same tenant as an object').to.include({ allowed: false })
    expect((await limiter.consume('t0', { cost: 1 })).allowed, 'with options').to.equal(false)
  })
  it('keeps each route and tenant its own window past the ones whose keys it keeps built (16,384)', async () => {
    const limiter = createRateLimiter({ store: memoryStore(), limit: 1, window: '1m', local: false })
    const keys = Array.from({ length: 16_384 + 2 }, (_, i) => ({ tenant: `t${i % 100}`, route: `GET /r${i}` }))
    for (const key of keys) expect((await limiter.consume(key)).allowed, key.route).to.equal(true)
    for (const key of [keys[0], keys[1], keys.at(-1)] as { tenant: string; route: string }[]) {
      expect(await limiter.consume(key), key.route).to.include({ allowed: false, remaining: 0 })
      expect((await limiter.consume({ ...key, route: 'other' })).allowed, 'another route').to.equal(true)
    }
    expect((await limiter.consume({ tenant: 't0' })).allowed, 'no route').to.equal(true)
    expect((await limiter.consume({ tenant: 't0' })).allowed, 'no route, again').to.equal(false)
    const refused = await limiter.consume({ tenant: 't0', route: 5 } as never).catch((error: Error) => error)
    expect(refused).to.include({ code: 'ERR_FLEETLIMIT_OPTION', option: 'key.route' })
  })
  it('are made at once, with no store promise in between: the decision is out when consume() returns', async () => {
    const store = memoryStore()
    const storeConsume = sinon.spy(store, 'consume')
    const limiter = createRateLimiter({ store, limit: 1, window: '1m', local: false })
    const seen: boolean[] = []
    limiter.on('decision', (d) => seen.push(d.allowed))
    const first = limiter.consume('t')
    const second = limiter.consume('t')
    expect(seen, 'before any await').to.deep.equal([true, false])
    expect([(await first).allowed, (await second).allowed]).to.deep.equal([true, false])
    expect(storeConsume.callCount).to.equal(0)
    expect(limiter.stats()).to.include({ storeCalls: 2, decisions: 2 })
  })
  it('carry a receipt that only their own limiter refunds, seen by no key of the decision', async () => {
    const store = memoryStore()
    const a = createRateLimiter({ store, limit: 2, window: '1m' })
    const b = createRateLimiter({ store, limit: 2, window: '1m' })
    const decision = await a.consume('t')
    expect(Reflect.ownKeys(decision)).to.deep.equal([
      'allowed',
      'limit',
      'remaining',
      'retryAfterMs',
      'resetMs',
      'source',
      'policy',
    ])
    expect(await b.refund(decision)).to.deep.equal({ units: 0, outcome: 'not-refundable' })
    expect(await a.refund(decision)).to.deep.equal({ units: 1, outcome: 'refunded' })
    expect(await a.peek('t')).to.include({ remaining: 2 })
  })
})

/** The coded error a call rejects with (or throws), for its `code` and `option`. */
async function failureOf(call: () => Promise<unknown>): Promise<OptionError & StoreError> {
  let caught: unknown
  try {
    await call()
  } catch (error) {
    caught = error
  }
  expect(isFleetlimitError(caught), String(caught)).to.equal(true)
  return caught as OptionError & StoreError
}

const quiet = { warn() {}, info() {} }

/** A copy of a memory store whose decisions fail: the limiter sends its calls through the guarded path. */
const failingStore = (): Store => ({
  ...memoryStore(),
  consume: () => Promise.reject(new Error('boom')),
  peek: () => Promise.reject(new Error('boom')),
  reset: () => Promise.reject(new Error('boom')),
  hold: () => Promise.reject(new Error('boom')),
})

// Fake performance and Date: the memory store's default clock, the local tier and the acquire queue read
// performance.now(), so every wait below is exact.
describe('createRateLimiter on the memory store (fake timers)', () => {
  let clock: sinon.SinonFakeTimers
  beforeEach(() => {
    clock = sinon.useFakeTimers({ now: 1_000_000, toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] })
  })
  afterEach(() => sinon.restore())

  describe('consume', () => {
    it('admits up to the limit, then denies with the exact wait, remaining and reset', async () => {
      const limiter = createRateLimiter({ limit: 3, window: 1_000, name: 'api', local: false })
      const admitted = [await limiter.consume('t'), await limiter.consume('t'), await limiter.consume('t')]
      expect(admitted.map((d) => d.remaining)).to.deep.equal([2, 1, 0])
      expect(admitted[0]).to.deep.equal({
        allowed: true,
        limit: 3,
        remaining: 2,
        retryAfterMs: 0,
        resetMs: 1_000,
        source: 'store',
        policy: 'api',
      })
      clock.tick(400)
      expect(await limiter.consume('t')).to.deep.equal({
        allowed: false,
        limit: 3,
        remaining: 0,
        retryAfterMs: 600,
        resetMs: 600,
        source: 'store',
        policy: 'api',
      })
      clock.tick(599)
      expect((await limiter.consume('t')).allowed, '1 ms before the wait ends').to.equal(false)
      clock.tick(1)
      // All three units left the window at 1000 ms: this one is alone in it.
      expect(await limiter.consume('t')).to.include({ allowed: true, remaining: 2 })
      expect(limiter.stats()).to.include({ decisions: 6, allowed: 4, denied: 2, storeCalls: 6, localHits: 0 })
    })

    it("counts the call's cost, the policy's cost by default, and refuses a cost that cannot fit, by code", async () => {
      const limiter = createRateLimiter({ limit: 5, window: 1_000, cost: 2, local: false })
      expect(await limiter.consume('t')).to.include({ allowed: true, remaining: 3 })
      expect(await limiter.consume('t', { cost: 3 })).to.include({ allowed: true, remaining: 0 })
      expect(await limiter.consume('t', { cost: 1 })).to.include({ allowed: false, retryAfterMs: 1_000 })
      for (const cost of [0, 6, 1.5, '1', Number.NaN]) {
        // A bad call is a rejected promise, never a synchronous throw.
        const pending = limiter.consume('t', { cost: cost as number })
        const error = await failureOf(() => pending)
        expect(error).to.include({ code: 'ERR_FLEETLIMIT_OPTION', option: 'cost' })
      }
      expect(limiter.stats()).to.include({ decisions: 3 })
    })

    it('refuses options it does not take, naming them: consume takes cost and limit, peek only limit', async () => {
      const limiter = createRateLimiter({ limit: 5, window: 1_000 })
      const consumeError = await failureOf(() => limiter.consume('t', { maxWaitMs: 5 } as never))
      expect(consumeError).to.include({ code: 'ERR_FLEETLIMIT_OPTION', option: 'options.maxWaitMs' })
      const peekError = await failureOf(() => limiter.peek('t', { cost: 2 } as never))
      expect(peekError).to.include({ code: 'ERR_FLEETLIMIT_OPTION', option: 'options.cost' })
      expect(limiter.stats()).to.include({ decisions: 0, storeCalls: 0 })
    })

    it('counts a tenant string and { tenant } in one window, each route in its own, and scope tenant across routes', async () => {
      const perRoute = createRateLimiter({ limit: 2, window: 1_000, local: false })
      await perRoute.consume('acme')
      expect(await perRoute.consume({ tenant: 'acme' })).to.include({ remaining: 0 })
      expect(await perRoute.consume({ tenant: 'acme', route: 'GET /a' })).to.include({ remaining: 1 })
      const perTenant = createRateLimiter({ limit: 2, window: 1_000, scope: 'tenant', local: false })
      await perTenant.consume({ tenant: 'acme', route: 'GET /a' })
      expect(await perTenant.consume({ tenant: 'acme', route: 'GET /b' })).to.include({ remaining: 0 })
      expect(await perTenant.consume('acme')).to.include({ allowed: false })
    })
  })

  describe('several policies in one call', () => {
    const policies = () => [
      definePolicy({ name: 'second', limit: 2, window: 1_000 }),
      definePolicy({ name: 'minute', limit: 3, window: 60_000 }),
    ]

    it('admits only when every policy admits, counts only then, and names the policy that binds', async () => {
      const limiter = createRateLimiter({ policies: policies(), local: false })
      expect(limiter.policies.map((p) => p.name)).to.deep.equal(['second', 'minute'])
      expect(limiter.policy.name).to.equal('second')
      // Admitted: the lead is the policy with the least remaining.
      expect(await limiter.consume('t')).to.include({ allowed: true, policy: 'second', remaining: 1 })
      await limiter.consume('t')
      const denied = await limiter.consume('t')
      expect(denied).to.include({ allowed: false, policy: 'second', retryAfterMs: 1_000 })
      expect(denied.policies?.map((d) => [d.policy, d.allowed, d.remaining])).to.deep.equal([
        ['second', false, 0],
        ['minute', true, 1],
      ])
      // The denied call was counted in neither window: the minute has 1 left, not 0.
      expect((await limiter.peek('t')).policies?.map((d) => d.remaining)).to.deep.equal([0, 1])
      clock.tick(1_000)
      expect(await limiter.consume('t')).to.include({ allowed: true, policy: 'minute', remaining: 0 })
      // Denied by the minute, with the longest wait: the minute's first unit leaves at 60 s from the start.
      expect(await limiter.consume('t')).to.include({ allowed: false, policy: 'minute', retryAfterMs: 59_000 })
    })

    it('takes a map from policy name to limit; a number, an array, a Map, an unknown name or a cost above the smallest limit are refused', async () => {
      const limiter = createRateLimiter({ policies: policies(), local: false })
      expect(await limiter.consume('t', { limit: { minute: 1 } })).to.include({ allowed: true, policy: 'minute' })
      expect(await limiter.consume('t', { limit: { minute: 1 } })).to.include({ allowed: false, policy: 'minute' })
      for (const [limit, option] of [
        [5, 'limit'],
        [[1, 2], 'limit'],
        [new Map([['minute', 1]]), 'limit'],
        [{ hour: 1 }, 'limit.hour'],
        [{ second: 0 }, 'limit.second'],
      ] as const) {
        const error = await failureOf(() => limiter.consume('t', { limit: limit as never }))
        expect(error, String(limit)).to.include({ code: 'ERR_FLEETLIMIT_OPTION', option })
      }
      const tooCostly = await failureOf(() => limiter.consume('t', { cost: 2, limit: { minute: 1 } }))
      expect(tooCostly).to.include({ code: 'ERR_FLEETLIMIT_OPTION', option: 'cost' })
    })

    it('refuses at construction: policy options beside policies, no or nine policies, twice a name, bucketed among several', () => {
      const one = definePolicy({ name: 'one', limit: 1, window: 1_000 })
      const cases: [() => unknown, string][] = [
        [() => createRateLimiter({ policies: [one], limit: 5 }), 'limit'],
        [() => createRateLimiter({ policies: [] }), 'policies'],
        [
          () => createRateLimiter({ policies: Array.from({ length: 9 }, (_, i) => ({ ...one, name: `p${i}` })) }),
          'policies',
        ],
        [() => createRateLimiter({ policies: [one, one] }), 'policies'],
        [
          () =>
            createRateLimiter({
              policies: [one, definePolicy({ name: 'b', limit: 1, window: 1_000, algorithm: 'bucketed' })],
            }),
          'policies',
        ],
        // The default cost of the policies must fit in the smallest limit.
        [
          () => createRateLimiter({ policies: [one, definePolicy({ name: 'two', limit: 2, window: 1_000, cost: 2 })] }),
          'cost',
        ],
      ]
      for (const [build, option] of cases) expect(optionErrorOf(build).option).to.equal(option)
    })
  })

  describe('shadow mode', () => {
    it('a shadow policy alone lets every call through, reports what it would have denied, and counts it', async () => {
      const limiter = createRateLimiter({ limit: 1, window: 1_000, shadow: true, local: false })
      const decisions = [await limiter.consume('t'), await limiter.consume('t')]
      expect(decisions[0]).to.not.have.property('shadowDenied')
      expect(decisions[1]).to.include({ allowed: true, shadowDenied: true, retryAfterMs: 0, remaining: 0 })
      expect(limiter.stats()).to.include({ decisions: 2, allowed: 2, denied: 0, shadowDenied: 1 })
      // The let-through call recorded nothing, so it has nothing to refund.
      expect(await limiter.refund(decisions[1] as Decision)).to.deep.equal({ units: 0, outcome: 'not-refundable' })
    })

    it('beside an enforced policy, the enforced one decides alone', async () => {
      const limiter = createRateLimiter({
        policies: [
          definePolicy({ name: 'trial', limit: 1, window: 1_000, shadow: true }),
          definePolicy({ name: 'real', limit: 2, window: 1_000 }),
        ],
        local: false,
      })
      await limiter.consume('t')
      expect(await limiter.consume('t')).to.include({ allowed: true, shadowDenied: true, policy: 'real' })
      expect(await limiter.consume('t')).to.include({ allowed: false, policy: 'real', retryAfterMs: 1_000 })
      expect(limiter.stats()).to.include({ allowed: 2, denied: 1, shadowDenied: 1 })
    })
  })

  describe('peek, reset and the deny cache', () => {
    it('peek reports one unit without consuming; reset forgets the window and the cached denial', async () => {
      // A store that says nothing of changed keys: the limiter itself drops the cached denial of the key it resets.
      const { onKeyChange: _, ...silent } = memoryStore()
      const limiter = createRateLimiter({ store: silent as Store, limit: 2, window: 1_000 })
      expect(await limiter.peek('t')).to.include({ allowed: true, remaining: 2, resetMs: 0 })
      expect(await limiter.peek('t', { limit: 5 })).to.include({ allowed: true, remaining: 5, limit: 5 })
      await limiter.consume('t')
      await limiter.consume('t')
      expect(await limiter.consume('t')).to.include({ allowed: false, source: 'store', retryAfterMs: 1_000 })
      clock.tick(250)
      // The store's denial counts down in this process: no store call.
      const calls = limiter.stats().storeCalls
      expect(await limiter.consume('t')).to.include({ allowed: false, source: 'local', retryAfterMs: 750 })
      expect(limiter.stats()).to.include({ storeCalls: calls, localHits: 1 })
      // A cached denial answers only calls under the limit it was made under: a larger plan asks the store.
      expect(await limiter.consume('t', { limit: 3 })).to.include({ allowed: true, source: 'store', remaining: 0 })
      await limiter.reset('t')
      expect(await limiter.consume('t')).to.include({ allowed: true, source: 'store', remaining: 1 })
    })

    it('a refund drops the cached denial of its key, so the next call asks the store', async () => {
      const limiter = createRateLimiter({ limit: 1, window: 1_000 })
      const admitted = await limiter.consume('t')
      expect(await limiter.consume('t')).to.include({ allowed: false, source: 'store' })
      expect(await limiter.consume('t')).to.include({ allowed: false, source: 'local' })
      expect(await limiter.refund(admitted)).to.deep.equal({ units: 1, outcome: 'refunded' })
      expect(await limiter.consume('t')).to.include({ allowed: true, source: 'store' })
    })
  })

  describe('leases', () => {
    it('one lease call serves the calls that arrive meanwhile; its unused units go back at its expiry', async () => {
      const store = memoryStore()
      const storeLease = sinon.spy(store, 'lease')
      // A lease of 4 units lives window / 50 = 20 ms.
      const limiter = createRateLimiter({ store, limit: 10, window: 1_000, local: { lease: 4 } })
      const decisions = await Promise.all([limiter.consume('t'), limiter.consume('t'), limiter.consume('t')])
      expect(decisions.map((d) => [d.source, d.remaining])).to.deep.equal([
        ['store', 9],
        ['local', 8],
        ['local', 7],
      ])
      expect(storeLease.callCount).to.equal(1)
      expect(limiter.stats()).to.include({ storeCalls: 1, localHits: 2, leasedUnits: 4, leaseUsedUnits: 3 })
      // A decision made from the lease is refunded in the shared window: 4 leased, 1 refunded.
      expect(await limiter.refund(decisions[2] as Decision)).to.deep.equal({ units: 1, outcome: 'refunded' })
      expect(await limiter.peek('t')).to.include({ remaining: 7 })
      await clock.tickAsync(20)
      expect(await limiter.peek('t')).to.include({ remaining: 8 })
      expect(limiter.stats()).to.include({ releaseCalls: 1, returnedUnits: 1 })
    })
  })

  describe('refund', () => {
    it('says why it removed nothing: a denial, an object it made none of, a store without refunds, units gone', async () => {
      const limiter = createRateLimiter({ limit: 1, window: 1_000, local: false })
      const admitted = await limiter.consume('t')
      const denied = await limiter.consume('t')
      expect(await limiter.refund(denied)).to.deep.equal({ units: 0, outcome: 'denied' })
      expect(await limiter.refund({ ...admitted })).to.deep.equal({ units: 0, outcome: 'not-refundable' })
      clock.tick(1_000)
      // Its unit left the window: the answer is kept and given again.
      expect(await limiter.refund(admitted)).to.deep.equal({ units: 0, outcome: 'expired' })
      expect(await limiter.refund(admitted)).to.deep.equal({ units: 0, outcome: 'expired' })

      const { refund: _, ...noRefunds } = memoryStore()
      const plain = createRateLimiter({ store: noRefunds as Store, limit: 1, window: 1_000, local: false })
      expect(await plain.refund(await plain.consume('t'))).to.deep.equal({ units: 0, outcome: 'not-refundable' })
    })

    it('refunds a decision once: concurrent and later refunds report already-refunded', async () => {
      const store = memoryStore()
      const storeRefund = sinon.spy(store, 'refund')
      const limiter = createRateLimiter({ store, limit: 3, window: 1_000, local: false })
      const admitted = await limiter.consume('t', { cost: 2 })
      const both = await Promise.all([limiter.refund(admitted), limiter.refund(admitted)])
      expect(both).to.deep.equal([
        { units: 2, outcome: 'refunded' },
        { units: 0, outcome: 'already-refunded' },
      ])
      expect(await limiter.refund(admitted)).to.deep.equal({ units: 0, outcome: 'already-refunded' })
      expect(await limiter.peek('t')).to.include({ remaining: 3 })
      expect(limiter.stats()).to.include({ refundedUnits: 2 })
      expect(storeRefund.callCount, 'one refund sent').to.equal(1)
    })

    it('removes the units from every window of several policies', async () => {
      const limiter = createRateLimiter({
        policies: [
          definePolicy({ name: 'second', limit: 2, window: 1_000 }),
          definePolicy({ name: 'minute', limit: 3, window: 60_000 }),
        ],
        local: false,
      })
      await limiter.consume('t')
      const second = await limiter.consume('t')
      expect(await limiter.refund(second)).to.deep.equal({ units: 1, outcome: 'refunded' })
      expect((await limiter.peek('t')).policies?.map((d) => d.remaining)).to.deep.equal([1, 2])
    })
  })

  describe('when the store fails', () => {
    it('fail-closed (the default): rejects with ERR_FLEETLIMIT_STORE, counts the error, decides nothing', async () => {
      const limiter = createRateLimiter({ store: failingStore(), limit: 2, window: 1_000, logger: quiet })
      const kinds: string[] = []
      limiter.on('storeError', (_error, kind) => kinds.push(kind))
      const error = await failureOf(() => limiter.consume('t'))
      expect(error.code).to.equal('ERR_FLEETLIMIT_STORE')
      expect(error.retryAfterMs, 'no breaker: a second').to.equal(1_000)
      expect(kinds).to.deep.equal(['error'])
      expect(limiter.stats()).to.include({ decisions: 0, storeCalls: 1, storeErrors: 1, timeouts: 0, degraded: 0 })
    })

    it('fail-open with a fallback: decided by a strict window of this process, reported as such', async () => {
      const limiter = createRateLimiter({
        store: failingStore(),
        limit: 100,
        window: 1_000,
        onStoreError: 'fail-open',
        fallback: { limit: 2 },
        logger: quiet,
      })
      const degraded: Decision[] = []
      limiter.on('degraded', (d) => degraded.push(d))
      await limiter.consume('t')
      clock.tick(300)
      const decisions = [await limiter.consume('t'), await limiter.consume('t')]
      expect(decisions[0]).to.include({ allowed: true, source: 'fallback', limit: 2, remaining: 0 })
      expect(decisions[1]).to.include({ allowed: false, source: 'fallback', limit: 2, retryAfterMs: 700 })
      expect(degraded).to.have.length(3)
      expect(await limiter.refund(decisions[0] as Decision)).to.deep.equal({ units: 0, outcome: 'not-refundable' })
      expect(limiter.stats()).to.include({ decisions: 3, degraded: 3, storeErrors: 3, allowed: 2, denied: 1 })
    })

    it('fail-open without a fallback: admitted as open, with the policy limit and no invented wait', async () => {
      const limiter = createRateLimiter({
        store: failingStore(),
        limit: 5,
        window: 1_000,
        name: 'api',
        onStoreError: 'fail-open',
        logger: quiet,
      })
      expect(await limiter.consume('t', { cost: 5 })).to.deep.equal({
        allowed: true,
        limit: 5,
        remaining: 5,
        retryAfterMs: 0,
        resetMs: 0,
        source: 'open',
        policy: 'api',
      })
    })

    it('an in-process store that refuses a call (maxKeys) is failed over like any other', async () => {
      const options = { store: memoryStore({ maxKeys: 1 }), limit: 5, window: 1_000, logger: quiet }
      const open = createRateLimiter({ ...options, onStoreError: 'fail-open', fallback: { limit: 1 } })
      expect(await open.consume('a')).to.include({ allowed: true, source: 'store' })
      expect(await open.consume('b')).to.include({ allowed: true, source: 'fallback', limit: 1 })
      const closed = createRateLimiter({ ...options, store: memoryStore({ maxKeys: 1 }) })
      await closed.consume('a')
      expect((await failureOf(() => closed.consume('b'))).code).to.equal('ERR_FLEETLIMIT_STORE')
      expect(closed.stats()).to.include({ decisions: 1, storeErrors: 1 })
    })

    it('reset empties the fallback window too, though the store is down', async () => {
      const store = { ...failingStore(), reset: () => Promise.resolve() }
      const limiter = createRateLimiter({
        store,
        limit: 5,
        window: 1_000,
        onStoreError: 'fail-open',
        fallback: { limit: 1 },
        logger: quiet,
      })
      await limiter.consume('t')
      expect(await limiter.consume('t')).to.include({ allowed: false, source: 'fallback' })
      await limiter.reset('t')
      expect(await limiter.consume('t')).to.include({ allowed: true, source: 'fallback' })
    })

    it('peek, reset and pause reject with ERR_FLEETLIMIT_STORE even when failing open', async () => {
      const limiter = createRateLimiter({
        store: failingStore(),
        limit: 5,
        window: 1_000,
        onStoreError: 'fail-open',
        fallback: { limit: 1 },
        logger: quiet,
      })
      for (const call of [() => limiter.peek('t'), () => limiter.reset('t'), () => limiter.pause('t', '1s')]) {
        expect((await failureOf(call)).code).to.equal('ERR_FLEETLIMIT_STORE')
      }
      expect(limiter.stats()).to.include({ storeErrors: 3, decisions: 0 })
    })

    it('warns once per outage through the logger, naming the policy and what it does meanwhile', async () => {
      const logger = { warn: sinon.fake(), info: sinon.fake() }
      const limiter = createRateLimiter({ store: failingStore(), name: 'api', limit: 2, window: 1_000, logger })
      for (let i = 0; i < 3; i++) await limiter.consume('t').catch(() => {})
      expect(logger.warn.callCount).to.equal(1)
      expect(String(logger.warn.firstCall.args[0])).to.equal(
        'fleetlimit: boom; policy "api" is failing closed until it recovers.',
      )
    })
  })

  describe('acquire', () => {
    it('waits exactly the wait under the call’s limit, in its own queue', async () => {
      const limiter = createRateLimiter({ limit: 2, window: 1_000, local: false })
      await limiter.consume('t', { limit: 1 })
      const admittedAt: number[] = []
      const waiting = limiter.acquire('t', { limit: 1 }).then((d) => {
        admittedAt.push(Date.now() - 1_000_000)
        return d
      })
      // The policy's limit has room: a call under it is not queued behind the plan's waiter.
      expect(await limiter.acquire('t')).to.include({ allowed: true, remaining: 0 })
      await clock.tickAsync(1_000)
      expect(await waiting).to.include({ allowed: true })
      expect(admittedAt).to.deep.equal([1_000])
    })

    it('rejects with the signal’s reason when it is already aborted, and bad options by name', async () => {
      const limiter = createRateLimiter({ limit: 1, window: 1_000, blockFor: '1s' })
      const reason = new Error('gone')
      expect(await limiter.acquire('t', { signal: AbortSignal.abort(reason) }).catch((e: unknown) => e)).to.equal(
        reason,
      )
      const transit = await failureOf(() => limiter.acquire('t', { transitMs: 10 }))
      expect(transit).to.include({ code: 'ERR_FLEETLIMIT_OPTION', option: 'transitMs' })
      const tooLong = await failureOf(() =>
        createRateLimiter({ limit: 1, window: 1_000 }).acquire('t', { transitMs: 1_001 }),
      )
      expect(tooLong).to.include({ code: 'ERR_FLEETLIMIT_OPTION', option: 'transitMs' })
      expect(await limiter.acquire('t', { maxWaitMs: Number.POSITIVE_INFINITY })).to.include({ allowed: true })
    })

    it('transitMs: the admitted units count transitMs longer than the window', async () => {
      const limiter = createRateLimiter({ limit: 1, window: 1_000 })
      const admitted = await limiter.acquire('t', { transitMs: 500 })
      expect(admitted).to.include({ allowed: true, source: 'store' })
      clock.tick(1_000)
      expect(await limiter.consume('t')).to.include({ allowed: false, retryAfterMs: 500 })
      clock.tick(500)
      expect(await limiter.consume('t')).to.include({ allowed: true })
    })
  })

  describe('blockFor', () => {
    it('a denial for lack of room blocks the key for blockFor, a denial during it does not extend it, reset ends it', async () => {
      const store = memoryStore()
      const storeLease = sinon.spy(store, 'lease')
      // Leases are off for a blocking policy: a block starts in the store, at the denial. No deny cache: each
      // denial below is the store's.
      const local = { lease: 2, denyCache: false }
      const limiter = createRateLimiter({ store, limit: 2, window: 1_000, blockFor: '5s', local })
      await limiter.consume('t')
      await limiter.consume('t')
      expect(await limiter.consume('t')).to.include({ allowed: false, retryAfterMs: 5_000 })
      clock.tick(1_000)
      // The window has room again; the block holds, counted from the first denial.
      expect(await limiter.consume('t')).to.include({ allowed: false, retryAfterMs: 4_000 })
      clock.tick(3_999)
      expect(await limiter.consume('t')).to.include({ allowed: false, retryAfterMs: 1 })
      await limiter.reset('t')
      expect(await limiter.consume('t')).to.include({ allowed: true, source: 'store' })
      expect(storeLease.callCount).to.equal(0)
      expect(limiter.stats(), 'six decisions and the reset').to.include({ storeCalls: 7, localHits: 0 })
    })
  })

  describe('pause', () => {
    it('denies the key for the pause, with the pause left as the wait, and drops its cached denial', async () => {
      // A store that says nothing of changed keys (as a Redis store without a subscriber): the limiter itself
      // drops the cached denial of the key it pauses.
      const { onKeyChange: _, ...silent } = memoryStore()
      const limiter = createRateLimiter({ store: silent as Store, limit: 1, window: 1_000 })
      await limiter.consume('t')
      expect(await limiter.consume('t')).to.include({ allowed: false, retryAfterMs: 1_000 })
      await limiter.pause('t', '5s')
      // The cached denial would still answer for 500 ms: the store's pause does instead.
      clock.tick(500)
      expect(await limiter.consume('t')).to.include({ allowed: false, source: 'store', retryAfterMs: 4_500 })
      clock.tick(4_500)
      expect(await limiter.consume('t')).to.include({ allowed: true })
      for (const ms of [-1, 'soon', 2_147_483_648]) {
        const error = await failureOf(() => limiter.pause('t', ms))
        expect(error).to.include({ code: 'ERR_FLEETLIMIT_OPTION', option: 'pause(key, ms)' })
      }
    })
  })

  describe('events and stats', () => {
    it('reports every counted decision, and each call sent to a store that can hang', async () => {
      const store: Store = { ...memoryStore() }
      const limiter = createRateLimiter({ store, limit: 1, window: 1_000, local: false })
      const seen: string[] = []
      const off = limiter.on('decision', (d) => seen.push(`${d.allowed}`))
      limiter.on('storeCall', (call) => seen.push(call.outcome))
      await limiter.consume('t')
      await limiter.consume('t')
      off()
      await limiter.consume('t')
      expect(seen).to.deep.equal(['ok', 'true', 'ok', 'false', 'ok'])
      expect(limiter.stats()).to.deep.equal({
        decisions: 3,
        allowed: 1,
        denied: 2,
        shadowDenied: 0,
        refundedUnits: 0,
        storeCalls: 3,
        releaseCalls: 0,
        localHits: 0,
        degraded: 0,
        storeErrors: 0,
        timeouts: 0,
        shortCircuits: 0,
        breakerOpenings: 0,
        leasedUnits: 0,
        leaseUsedUnits: 0,
        expiredUnits: 0,
        returnedUnits: 0,
      })
      expect(limiter.breakerState, 'no breaker on a memory store').to.equal(undefined)
    })
  })

  describe('options at construction', () => {
    it('refuses a bad maxQueue, logger or local option with a coded error naming it', () => {
      const cases: [object, string][] = [
        [{ maxQueue: 0 }, 'maxQueue'],
        [{ maxQueue: 1.5 }, 'maxQueue'],
        [{ logger: {} }, 'logger'],
        [{ logger: { warn: 'console' } }, 'logger'],
        [{ local: { denyCache: 'yes' } }, 'local.denyCache'],
        [{ local: { lease: 1 } }, 'local.lease'],
      ]
      for (const [options, option] of cases) {
        expect(optionErrorOf(() => createRateLimiter({ limit: 5, window: 1_000, ...options })).option).to.equal(option)
      }
    })
  })
})
