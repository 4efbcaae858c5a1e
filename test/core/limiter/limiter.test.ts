import { createRateLimiter, memoryStore, type Store } from '@fleetlimit/core'
import { expect } from 'chai'
import sinon from 'sinon'
import { createServerSet } from '../../../packages/core/src/store/server-set.js'

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
  const store: Store = { ...memoryStore(), servers }
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
