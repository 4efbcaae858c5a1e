import { createRateLimiter, memoryStore, redisStore } from '@fleetlimit/core'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { expect } from 'chai'
import { Redis } from 'ioredis'
import { serverPerTest } from '../support/faults.js'

/** The client's next event of this name; events.once would reject on an 'error' first (a refused reconnect). */
const next = (emitter: { once(event: string, listener: () => void): unknown }, event: string) =>
  new Promise<void>((resolve) => emitter.once(event, resolve))

const quiet = { warn() {}, info() {} }

describe('limiter.ready(): whether decisions come from the store now', function () {
  this.timeout(30_000)
  const redis = serverPerTest()
  let client: Redis
  beforeEach(async () => {
    client = new Redis(redis.server.url)
    client.on('error', () => {})
    await next(client, 'ready')
  })
  afterEach(() => client.disconnect())

  // A deadline a busy machine cannot miss: the probe's outcome is the server's, not the scheduler's.
  const limiterOn = () =>
    createRateLimiter({
      store: redisStore(client, { breaker: { failureThreshold: 3, cooldownMs: 60_000 } }),
      limit: 10,
      window: '1m',
      timeoutMs: 5_000,
      logger: quiet,
    })

  it('is always true on the memory store', async () => {
    expect(await createRateLimiter({ store: memoryStore(), limit: 1, window: '1s' }).ready()).to.equal(true)
  })

  it('false while Redis is down; true once the client is back, with no decision in between to close the breaker', async () => {
    const limiter = limiterOn()
    expect(await limiter.ready()).to.equal(true)
    expect(limiter.stats().storeCalls, 'a closed breaker needs no call').to.equal(0)

    const closed = next(client, 'close')
    await redis.server.stop()
    await closed
    expect(await limiter.ready()).to.equal(false)
    // Decisions during the outage open the breaker; its cool-down (a minute) is far from over when Redis returns.
    for (let i = 0; i < 3; i++) await limiter.consume('t').catch(() => {})
    expect(limiter.breakerState).to.equal('open')
    expect(await limiter.ready()).to.equal(false)

    const back = next(client, 'ready')
    redis.server = await startRedisServer([], { port: redis.server.port })
    await back
    // The client's return lets the open breaker probe at once: ready() is that probe.
    const calls = limiter.stats().storeCalls
    expect(await limiter.ready()).to.equal(true)
    expect(limiter.breakerState).to.equal('closed')
    expect(limiter.stats().storeCalls - calls).to.equal(1)
    expect(await limiter.consume('t')).to.include({ allowed: true, source: 'store' })
  })

  it('false while the breaker is open and waits for its cool-down, though the client stays connected', async () => {
    // A frozen server (SIGSTOP): the connection stays up, the call misses its deadline and opens the breaker.
    redis.server.freeze()
    const limiter = createRateLimiter({
      store: redisStore(client, { breaker: { failureThreshold: 1, cooldownMs: 60_000 } }),
      limit: 10,
      window: '1m',
      timeoutMs: 50,
      logger: quiet,
    })
    await limiter.consume('t').catch(() => {})
    expect(limiter.breakerState).to.equal('open')
    expect(client.status).to.equal('ready')
    const calls = limiter.stats().storeCalls
    expect(await limiter.ready()).to.equal(false)
    expect(limiter.stats().storeCalls - calls, 'no probe before the cool-down ends').to.equal(0)
  })
})
