import { createRateLimiter, isFleetlimitError, redisStore, type StoreError } from '@fleetlimit/core'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { sleep } from '@fleetlimit/test-kit/sleep'
import { expect } from 'chai'
import { defaultClient, serverPerTest } from '../support/faults.js'
import { clientKinds, type TestClient } from '../support/redis.js'

const quiet = { warn() {}, info() {} }
/** The Redis key of tenant 'tenant' under a policy of 1 000 000 a minute. */
const TENANT_KEY = 'fleetlimit:1000000-per-60000ms~sl3-60000:{tenant}'

/** Blocks this process's event loop, as a long synchronous handler would. */
function blockEventLoop(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {}
}

/** Resolves to 'store' (or the decision's source) or to the error, so one failure does not hide the others. */
const outcome = (call: Promise<{ source: string }>) =>
  call.then(
    (d) => d.source,
    (error: unknown) => error,
  )

/**
 * A redis-server per test, set up through `redis.client` (ioredis), and the client of the kind under test, which
 * the stores use: read `tested.client`.
 */
function serverAndClientPerTest(kind: (typeof clientKinds)[number]) {
  const redis = serverPerTest()
  const current = { redis } as { redis: typeof redis; tested: TestClient }
  beforeEach(async () => {
    // GLIDE gives a call up after its own requestTimeout (250 ms by default): behind a paused server, on a loaded
    // machine whose event loop runs late, that could come before the limiter's deadline, which these tests are of.
    current.tested = await kind.connect(redis.server.url, { requestTimeoutMs: 5_000 })
  })
  afterEach(() => current.tested.close())
  return current
}

// Each client library in turn: the same Redis, the same failures, the same answers.
for (const kind of clientKinds) {
  describe(`a healthy but busy Redis, and a process that gives up on a call (${kind.name})`, function () {
    this.timeout(60_000)
    const at = serverAndClientPerTest(kind)
    const { redis } = at
    /** Units the key's window holds, read on the tested client after every command the limiter sent on it. */
    const unitsIn = (key: string) => at.tested.units(key)
    /** A limiter on the tested client that admits every call of these bursts (its key: TENANT_KEY). */
    const roomyLimiter = () =>
      createRateLimiter({ store: redisStore(at.tested.client), limit: 1_000_000, window: '1m', logger: quiet })

    it('a burst from this process queues here, not in the socket: 5,000 calls at once, all decided by the store', async () => {
      const limiter = roomyLimiter()
      const outcomes = await Promise.all(Array.from({ length: 5_000 }, () => outcome(limiter.consume('tenant'))))
      expect(outcomes.filter((o) => o !== 'store')).to.deep.equal([])
      expect(limiter.stats()).to.include({ allowed: 5_000, storeErrors: 0, breakerOpenings: 0 })
      expect(await unitsIn(TENANT_KEY)).to.equal(5_000)
    })

    it('an event loop blocked for 300 ms while replies are in flight turns none of them into a timeout', async () => {
      const limiter = roomyLimiter()
      const calls = Array.from({ length: 2_000 }, () => outcome(limiter.consume('tenant')))
      // The replies arrive while the loop is blocked; every deadline has passed by the time it runs again.
      blockEventLoop(300)
      const outcomes = await Promise.all(calls)
      expect(outcomes.filter((o) => o !== 'store')).to.deep.equal([])
      expect(limiter.stats()).to.include({ allowed: 2_000, storeErrors: 0, timeouts: 0, breakerOpenings: 0 })
      expect(await unitsIn(TENANT_KEY)).to.equal(2_000)
    })

    it('replies read late by a busy event loop teach the store no clock that refuses calls still waited for', async () => {
      const limiter = roomyLimiter()
      // Twice: calls sent at once (within maxInFlight), their replies read 300 ms late. Learning the server's clock
      // from those replies would put the second calls' deadlines 300 ms early: Redis would refuse them at once,
      // and the refusals, read late too, would leave no time to ask again.
      const outcomes: unknown[] = []
      for (let round = 0; round < 2; round++) {
        const calls = Array.from({ length: 100 }, () => outcome(limiter.consume('tenant')))
        blockEventLoop(300)
        outcomes.push(...(await Promise.all(calls)))
      }
      expect(outcomes.filter((o) => o !== 'store')).to.deep.equal([])
      expect(limiter.stats()).to.include({ allowed: 200, storeErrors: 0, breakerOpenings: 0 })
      expect(await unitsIn(TENANT_KEY)).to.equal(200)
    })

    // The one answer before the pause teaches the store the server's clock, which the deadlines are sent in: read
    // in time, or 50 ms late (an event loop blocked while it was in flight), which teaches only a clock that errs
    // late by up to that much: the deadlines still pass long before the pause ends.
    for (const lateMs of [0, 50]) {
      it(`a decision its caller gave up on records nothing: calls that reach a paused Redis after their deadline (the clock's reply read ${lateMs} ms late)`, async () => {
        const limiter = createRateLimiter({
          store: redisStore(at.tested.client),
          limit: 1_000,
          window: '1m',
          timeoutMs: 150,
          logger: quiet,
        })
        const first = limiter.consume('tenant')
        blockEventLoop(lateMs)
        expect((await first).source).to.equal('store')
        const pauser = await defaultClient(redis.server.url)
        try {
          await pauser.call('CLIENT', 'PAUSE', '400', 'ALL')
          const outcomes = await Promise.all(Array.from({ length: 20 }, () => outcome(limiter.consume('tenant'))))
          expect(outcomes.every((o) => isFleetlimitError(o, 'ERR_FLEETLIMIT_STORE'))).to.equal(true)
          expect(limiter.stats()).to.include({ allowed: 1, timeouts: 20 })
          // Sent after the limiter's calls on the same connection: answered once the paused scripts have run.
          expect(await unitsIn('fleetlimit:1000-per-60000ms~sl3-60000:{tenant}')).to.equal(1)
        } finally {
          pauser.disconnect()
        }
      })
    }

    it('a lease its caller gave up on reserves nothing', async () => {
      const limiter = createRateLimiter({
        store: redisStore(at.tested.client),
        name: 'upstream',
        limit: 10_000,
        window: '1m',
        local: { lease: 400 },
        logger: quiet,
      })
      expect((await limiter.consume('warm')).source).to.equal('store')
      const pauser = await defaultClient(redis.server.url)
      try {
        await pauser.call('CLIENT', 'PAUSE', '600', 'ALL')
        const tenants = ['a', 'b', 'c', 'd', 'e']
        const outcomes = await Promise.all(tenants.map((t) => outcome(limiter.consume(t))))
        expect(outcomes.every((o) => isFleetlimitError(o, 'ERR_FLEETLIMIT_STORE'))).to.equal(true)
        const held = await Promise.all(tenants.map((t) => unitsIn(`fleetlimit:upstream~sl3-60000:{${t}}`)))
        expect(held).to.deep.equal([0, 0, 0, 0, 0])
      } finally {
        pauser.disconnect()
      }
    })
  })

  describe(`an error about one key stays with that key (${kind.name})`, function () {
    this.timeout(60_000)
    const at = serverAndClientPerTest(kind)
    const { redis } = at

    it('WRONGTYPE on one tenant fails its calls alone: the breaker stays closed for every other tenant', async () => {
      const store = redisStore(at.tested.client)
      const api = createRateLimiter({ store, name: 'api', limit: 100, window: '1m', logger: quiet })
      const search = createRateLimiter({ store, name: 'search', limit: 100, window: '1m', logger: quiet })
      await redis.client.hset('fleetlimit:api~sl3-60000:{broken}', 'not', 'a log')
      const broken = await Promise.all(Array.from({ length: 8 }, () => outcome(api.consume('broken'))))
      expect(broken.every((o) => isFleetlimitError(o, 'ERR_FLEETLIMIT_STORE'))).to.equal(true)
      expect(String((broken[0] as StoreError).cause)).to.match(/^ReplyError: WRONGTYPE/)
      expect(api.breakerState).to.equal('closed')
      const others = await Promise.all(Array.from({ length: 20 }, () => outcome(search.consume('other'))))
      expect(others.filter((o) => o !== 'store')).to.deep.equal([])
      expect(api.stats()).to.include({ storeErrors: 8, shortCircuits: 0, breakerOpenings: 0 })
    })

    it('NOPERM on a key the ACL user may not touch fails that call alone', async () => {
      await redis.client.call('ACL', 'SETUSER', 'limited', 'on', '>pw', 'resetkeys', '~fleetlimit:ok*', '+@all')
      const client = await kind.connect(redis.server.url.replace('redis://', 'redis://limited:pw@'))
      try {
        const store = redisStore(client.client)
        const denied = createRateLimiter({ store, name: 'no', limit: 5, window: '1m', logger: quiet })
        const allowed = createRateLimiter({ store, name: 'ok', limit: 5, window: '1m', logger: quiet })
        const errors = await Promise.all(Array.from({ length: 8 }, () => outcome(denied.consume('t'))))
        expect(String((errors[0] as StoreError).cause)).to.match(/NOPERM/)
        expect((await allowed.consume('t')).source).to.equal('store')
        expect(allowed.stats().breakerOpenings + denied.stats().breakerOpenings).to.equal(0)
      } finally {
        client.close()
      }
    })

    it('a sliding-log and a bucketed policy with the same limit and window never share a key', async () => {
      const store = redisStore(at.tested.client)
      const log = createRateLimiter({ store, limit: 3, window: '1m', logger: quiet })
      const bucketed = createRateLimiter({ store, limit: 3, window: '1m', algorithm: 'bucketed', logger: quiet })
      expect(log.policy.name).to.equal(bucketed.policy.name)
      const decisions = []
      for (let i = 0; i < 4; i++) decisions.push(await log.consume('t'), await bucketed.consume('t'))
      expect(decisions.map((d) => `${d.allowed} ${d.source}`)).to.deep.equal([
        ...Array.from({ length: 6 }, () => 'true store'),
        'false store',
        'false store',
      ])
    })
  })

  describe(`an out-of-memory Redis refuses decisions (${kind.name})`, function () {
    this.timeout(60_000)

    it('with maxmemory and noeviction: new tenants are refused with a StoreError, and memory does not grow', async () => {
      const server = await startRedisServer(['--maxmemory', '4mb', '--maxmemory-policy', 'noeviction'])
      const client = await defaultClient(server.url)
      let tested: TestClient | undefined
      try {
        // Fill the server past maxmemory: the last write that is let through takes it over.
        const chunk = 'x'.repeat(4 * 1024)
        for (let i = 0; ; i++) {
          const refused = await client.set(`ballast:${i}`, chunk).then(
            () => false,
            () => true,
          )
          if (refused) break
        }
        const keys = await client.dbsize()
        // The data's memory: client buffers (refused requests waiting to be read) and the script cache are not it.
        const used = async () => {
          const info = await client.info('memory')
          const field = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(info)?.[1])
          return field('used_memory') - field('mem_clients_normal') - field('used_memory_scripts')
        }
        const before = await used()
        // ioredis: the store on the client that filled the server; node-redis: on a connection of its own, opened now.
        tested = kind.name === 'ioredis' ? undefined : await kind.connect(server.url)
        const limiter = createRateLimiter({
          store: redisStore(tested?.client ?? client),
          limit: 100,
          window: '1m',
          onStoreError: 'fail-open',
          fallback: { limit: 1 },
          logger: quiet,
          // Refusals, not deadlines, are what this test is about: a busy machine must not open the breaker.
          timeoutMs: '10s',
          // No local tier: its subscriber connection (README, the local tier) would count in used_memory.
          local: false,
        })
        const decisions = await Promise.all(Array.from({ length: 500 }, (_, i) => limiter.consume(`tenant-${i}`)))
        expect(decisions.filter((d) => d.source !== 'fallback')).to.deep.equal([])
        expect(await client.dbsize(), 'no key was written').to.equal(keys)
        expect(limiter.stats()).to.include({ storeErrors: 500, breakerOpenings: 0 })
        if (tested) {
          // Measured as before, with one connection: the other's buffers hold its refused requests, not data.
          tested.close()
          const clients = async () => Number(/connected_clients:(\d+)/.exec(await client.info('clients'))?.[1])
          // The server drops the closed connection at its next event loop turn: wait for that, not for a time.
          for (let tries = 0; (await clients()) > 1; tries++) {
            if (tries > 500) throw new Error('the closed connection is still open on the server')
            await sleep(10)
          }
        }
        // What the refused calls leave allocated (the script they carried, 21.7 kB, and buffers not yet returned) was
        // measured between 22 and 86 kB, whether 50 or 2,000 tenants were refused; no key was written (above).
        expect(await used()).to.be.below(before + 128 * 1024)
      } finally {
        tested?.close()
        client.disconnect()
        await server.stop()
      }
    })
  })

  // GLIDE has no client to give before it logs in: its createClient rejects a wrong password itself.
  const { open } = kind
  if (open)
    describe(`a wrong password says so (${kind.name})`, function () {
      this.timeout(60_000)

      it('the warning and the StoreError carry the client’s last error (WRONGPASS), quoted cleanly, and the warning says it will not pass by itself', async () => {
        const server = await startRedisServer(['--requirepass', 'secret'])
        const client = open(server.url.replace('redis://', 'redis://:wrong@'))
        // node-redis gives no sign of the attempts that failed before a store watched it, and sends a command while a
        // new attempt is made: there the store watches from the start, as one made beside its client does.
        const madeFirst = kind.name === 'ioredis' ? undefined : redisStore(client.client)
        const firstError = client.nextError()
        try {
          await firstError
          const warnings: string[] = []
          const limiter = createRateLimiter({
            store: madeFirst ?? redisStore(client.client),
            limit: 5,
            window: '1m',
            logger: { warn: (m: string) => warnings.push(m) },
          })
          const error = (await limiter.consume('t').catch((e: unknown) => e)) as StoreError
          expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE')).to.equal(true)
          expect(String(error.cause)).to.match(/WRONGPASS/)
          expect(error.message).to.match(/WRONGPASS/)
          expect(warnings).to.have.length(1)
          expect(warnings[0]).to.match(/WRONGPASS/)
          expect(warnings[0]).not.to.include('.;')
          // A refused login never passes by itself: the line names the credentials and promises no recovery.
          expect(warnings[0]).to.include("Redis refused the client's credentials, which does not pass by itself")
          expect(warnings[0]).not.to.include('until it recovers')
        } finally {
          client.close()
          await server.stop()
        }
      })
    })
}
