import {
  createRateLimiter,
  type Decision,
  isFleetlimitError,
  type RateLimiter,
  redisStore,
  type StoreError,
} from '@fleetlimit/core'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { sleep } from '@fleetlimit/test-kit/sleep'
import { expect } from 'chai'
import sinon from 'sinon'
import { replyCode } from '../../packages/core/src/store/server-failure.js'
import { countEvents, decideMany, serverPerTest } from '../support/faults.js'
import { clientKinds, type TestClient } from '../support/redis.js'

const TIMEOUT_MS = 100
const COOLDOWN_MS = 300
const quiet = { warn() {}, info() {} }

// Each client library on the same faults: `redis.client` (ioredis) sets the scene, `tested` is the store's client.
for (const kind of clientKinds) {
  describe(`real faults on a redis-server the test starts (${kind.name})`, function () {
    this.timeout(60_000)
    const redis = serverPerTest()
    let tested: TestClient
    beforeEach(async () => {
      tested = await kind.connect(redis.server.url)
    })
    afterEach(() => tested.close())

    const limiterOn = (options: object = {}) => {
      const logger = { warn: sinon.fake(), info: sinon.fake() }
      const store = redisStore(tested.client, { breaker: { failureThreshold: 3, cooldownMs: COOLDOWN_MS } })
      const limiter = createRateLimiter({
        store,
        limit: 1_000,
        window: '10s',
        timeoutMs: TIMEOUT_MS,
        logger,
        ...options,
      })
      return { limiter, logger, events: countEvents(limiter) }
    }

    /**
     * After the outage: the server is back; the store decides again at a probe after the reconnect. A probe that
     * misses its deadline (a fresh server loading the script on a busy machine) opens the breaker once more and the
     * next probe is tried: returns how many missed, for the exact counts that follow.
     */
    async function expectRecovery(limiter: RateLimiter, ready: Promise<unknown>): Promise<number> {
      await ready
      for (let missed = 0; missed < 3; missed++) {
        await sleep(COOLDOWN_MS)
        const decision = await limiter.consume('tenant').catch((error: unknown) => {
          if (!isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE')) throw error
          return undefined
        })
        if (decision) {
          expect(decision.source).to.equal('store')
          return missed
        }
      }
      throw new Error('the store did not decide again in 3 probes after the server returned')
    }

    it('outage (kill -9), failing closed: every decision fails fast with the coded error, then short-circuits, then recovers', async () => {
      const { limiter, logger, events } = limiterOn()
      expect((await decideMany(limiter, 20)).errors).to.have.length(0)
      await redis.server.stop()

      const answered: StoreError[] = []
      const off = limiter.on('storeError', (failure, how) => how === 'error' && answered.push(failure))
      const outage = await decideMany(limiter, 60)
      off()
      expect(outage.decisions).to.have.length(0)
      expect(outage.errors).to.have.length(60)
      expect(outage.errors.every((e) => isFleetlimitError(e, 'ERR_FLEETLIMIT_STORE'))).to.equal(true)
      // No decision hangs in the client: each settled while the server was still down, none waited for the client
      // to give up. A call the client took before it saw the connection drop ends by the deadline on ioredis (which
      // keeps it to resend on reconnect) and at the drop on node-redis, failed as a lost connection (by node-redis
      // when it was written, by fleetlimit when not yet: see createUnwrittenCommands); the others are not sent.
      const { error, timeout, 'short-circuit': notSent } = outage.failures
      if (kind.name === 'ioredis') expect(error, 'failures answered by the client').to.equal(0)
      const replies = answered.map((failure) => replyCode(failure.cause)).filter((code) => code !== undefined)
      expect(replies, 'lost connections, not replies').to.deep.equal([])
      expect(error + timeout + notSent).to.equal(60)

      // With the breaker open nothing is sent: each decision is answered in-process.
      const before = limiter.stats()
      const open = await decideMany(limiter, 200)
      expect(open.errors).to.have.length(200)
      const during = limiter.stats()
      expect(during.storeCalls - before.storeCalls, 'nothing sent while open').to.equal(0)
      expect(during.shortCircuits - before.shortCircuits).to.equal(200)
      expect((open.errors[0] as StoreError).retryAfterMs).to.be.within(1, COOLDOWN_MS)

      const ready = tested.nextReady()
      redis.server = await startRedisServer([], { port: redis.server.port })
      const missed = await expectRecovery(limiter, ready)

      const stats = limiter.stats()
      expect(stats).to.include({ decisions: 21, allowed: 21, degraded: 0, breakerOpenings: 1 + missed })
      expect(events).to.deep.equal({
        storeError: stats.storeErrors + stats.shortCircuits,
        degraded: 0,
        breakerOpen: 1 + missed,
        breakerClose: 1,
      })
      expect(stats.storeErrors + stats.shortCircuits).to.equal(260 + missed)
      expect(logger.warn.callCount, 'one warning per outage').to.equal(1)
      expect(logger.info.callCount, 'one note on recovery').to.equal(1)
    })

    it('outage, failing open: at most fallback.limit admissions per window in this process, each counted', async () => {
      const { limiter, events } = limiterOn({
        limit: 1_000,
        window: '500ms',
        onStoreError: 'fail-open',
        fallback: { limit: 3 },
      })
      await redis.server.stop()
      // The fallback is a window of this process (its exact waits are pinned under fake timers in
      // test/core/limiter/limiter.test.ts): here, that a dead store hands the decisions to it.
      const { decisions } = await decideMany(limiter, 4, 1)
      expect(decisions.map((d) => [d.source, d.allowed, d.limit])).to.deep.equal([
        ['fallback', true, 3],
        ['fallback', true, 3],
        ['fallback', true, 3],
        ['fallback', false, 3],
      ])
      const wait = (decisions[3] as Decision).retryAfterMs
      expect(wait, 'until the first admission leaves the 500 ms window').to.be.within(1, 500)
      // A Node timer counts whole ms of the event loop's clock, so it may fire up to 1 ms early by performance.now().
      await sleep(wait + 1)
      expect(await limiter.consume('tenant'), 'admitted once the wait is over').to.include({
        source: 'fallback',
        allowed: true,
      })
      const stats = limiter.stats()
      expect(stats).to.include({ decisions: 5, degraded: 5, allowed: 4, denied: 1 })
      expect(events.degraded).to.equal(stats.decisions)
      expect(events.storeError).to.equal(stats.storeErrors + stats.shortCircuits)
      // A reset cannot be answered by the fallback: it rejects, bounded like a decision, and never waits for Redis.
      const reset = await limiter.reset('tenant').then(
        () => undefined,
        (error: unknown) => error,
      )
      expect(isFleetlimitError(reset, 'ERR_FLEETLIMIT_STORE'), String(reset)).to.equal(true)
      expect(limiter.stats().storeErrors + limiter.stats().shortCircuits, 'the reset counted once').to.equal(
        stats.storeErrors + stats.shortCircuits + 1,
      )
    })

    it('outage, failing open without a fallback: admitted as "open", with no invented numbers', async () => {
      const { limiter } = limiterOn({ onStoreError: 'fail-open' })
      await redis.server.stop()
      const { decisions } = await decideMany(limiter, 20)
      expect(decisions.every((d) => d.allowed && d.source === 'open')).to.equal(true)
    })

    it('hang (SIGSTOP): decisions time out within the deadline, the breaker opens, and SIGCONT recovers', async () => {
      const { limiter, events } = limiterOn()
      await decideMany(limiter, 10)
      redis.server.freeze()
      const hung = await decideMany(limiter, 40)
      expect(hung.errors).to.have.length(40)
      // Every decision settled while the server was still frozen (a decision waiting for it would never
      // settle): by its deadline, or not sent once the breaker opened.
      expect(hung.failures.error).to.equal(0)
      expect(hung.failures.timeout + hung.failures['short-circuit']).to.equal(40)
      // The 10 calls in flight miss the deadline; before the third miss opens the breaker, the workers of the
      // first two misses may send again (whether they do depends on how the deadlines' timers are batched).
      expect(hung.failures.timeout).to.be.within(10, 12)
      const stats = limiter.stats()
      expect(stats.timeouts).to.equal(hung.failures.timeout)
      expect(stats.timeouts).to.equal(stats.storeErrors)
      expect(stats.breakerOpenings).to.equal(1)
      redis.server.thaw()
      await sleep(COOLDOWN_MS)
      expect((await limiter.consume('tenant')).source).to.equal('store')
      expect(events.breakerClose).to.equal(1)
    })

    // A cool-down of 10 minutes: only the server's signs of life can close the breaker within the test.
    const patientLimiter = () => {
      const store = redisStore(tested.client, { breaker: { failureThreshold: 3, cooldownMs: 600_000 } })
      const limiter = createRateLimiter({ store, limit: 1_000, window: '10s', timeoutMs: TIMEOUT_MS, logger: quiet })
      return { limiter, events: countEvents(limiter) }
    }

    it('restart: the breaker probes when the client is ready again, not at the end of its cool-down', async () => {
      const { limiter, events } = patientLimiter()
      await limiter.consume('tenant')
      await redis.server.stop()
      await decideMany(limiter, 20)
      expect(limiter.breakerState).to.equal('open')
      const sent = limiter.stats().storeCalls
      await decideMany(limiter, 20)
      expect(limiter.stats().storeCalls, 'nothing sent while open').to.equal(sent)

      const ready = tested.nextReady()
      redis.server = await startRedisServer([], { port: redis.server.port })
      await ready
      expect((await limiter.consume('tenant')).source).to.equal('store')
      expect(limiter.stats().storeCalls, 'one probe').to.equal(sent + 1)
      expect(events).to.include({ breakerOpen: 1, breakerClose: 1 })
    })

    it('freeze: the late answers of calls given up make the breaker probe at once after SIGCONT', async () => {
      const { limiter, events } = patientLimiter()
      await limiter.consume('tenant')
      redis.server.freeze()
      await decideMany(limiter, 20)
      expect(limiter.breakerState).to.equal('open')
      const sent = limiter.stats().storeCalls

      redis.server.thaw()
      // A read on the same connection: its reply comes after the late replies to the calls given up, whose
      // promise chains have run by the next turn of the event loop.
      await tested.units('fleetlimit:unrelated')
      await new Promise((resolve) => setImmediate(resolve))
      expect((await limiter.consume('tenant')).source).to.equal('store')
      expect(limiter.stats().storeCalls, 'one probe').to.equal(sent + 1)
      expect(events).to.include({ breakerOpen: 1, breakerClose: 1 })
    })

    it('lost scripts: SCRIPT FLUSH, and a restart with an empty script cache, cost no error', async () => {
      const { limiter } = limiterOn()
      await decideMany(limiter, 5)
      await redis.client.script('FLUSH')
      const afterFlush = await decideMany(limiter, 20)
      expect(afterFlush.errors).to.have.length(0)
      expect(afterFlush.decisions.every((d) => d.source === 'store')).to.equal(true)

      // A restart: once the client is back, the first call meets NOSCRIPT and is answered by EVAL.
      await redis.server.stop()
      const ready = tested.nextReady()
      redis.server = await startRedisServer([], { port: redis.server.port })
      await ready
      const storeErrors = limiter.stats().storeErrors
      const afterRestart = await limiter.consume('tenant')
      expect(afterRestart.source).to.equal('store')
      expect(limiter.stats().storeErrors, 'NOSCRIPT never reached the caller').to.equal(storeErrors)
    })

    it('error replies (a key of the wrong type, a read-only replica) are store errors, counted', async () => {
      const { limiter, events } = limiterOn({ name: 'api', onStoreError: 'fail-open', fallback: { limit: 5 } })
      await redis.client.hset('fleetlimit:api~sl3-10000:{tenant}', 'not', 'a log')
      const wrongType = await decideMany(limiter, 2, 1)
      expect(wrongType.decisions.map((d) => d.source)).to.deep.equal(['fallback', 'fallback'])
      expect(limiter.stats()).to.include({ storeErrors: 2, timeouts: 0, degraded: 2 })
      expect(events.storeError).to.equal(2)

      const replica = await startRedisServer(['--replicaof', '127.0.0.1', String(redis.server.port)])
      const connecting = kind.connect(replica.url)
      if (kind.name === 'GLIDE') {
        // GLIDE refuses a replica alone at createClient: its user never holds a client that writes to one.
        const refused = await connecting.catch((error: unknown) => error)
        await replica.stop()
        expect(String(refused)).to.match(/No primary node found/)
        return
      }
      const replicaClient = await connecting
      try {
        const onReplica = createRateLimiter({
          store: redisStore(replicaClient.client),
          limit: 5,
          window: '1s',
          logger: { warn() {} },
        })
        const error = await onReplica.consume('tenant').catch((e: unknown) => e)
        expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE')).to.equal(true)
        expect(String((error as StoreError).cause)).to.match(/READONLY/)
        expect(onReplica.stats()).to.include({ storeErrors: 1, decisions: 0 })
      } finally {
        replicaClient.close()
        await replica.stop()
      }
    })
  })
}
