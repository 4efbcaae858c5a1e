import { createRateLimiter, isFleetlimitError, redisStore, type StoreError } from '@fleetlimit/core'
import { type RedisServer, startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { expect } from 'chai'
import { Redis } from 'ioredis'
import { MAX_BATCH } from '../../../packages/core/src/store/call-batcher.js'
import { clientKinds, commandCalls, type TestClient } from '../../support/redis.js'

const quiet = { warn() {}, info() {} }

/** A decision's source, or the error's code and its cause's message. */
const outcome = (decision: Promise<{ allowed: boolean; source: string }>) =>
  decision.then(
    (d) => (d.allowed ? `${d.source} admitted` : `${d.source} denied`),
    (error: unknown) => (isFleetlimitError(error) ? `${error.code}: ${String((error as StoreError).cause)}` : error),
  )

for (const kind of clientKinds) {
  describe(`redisStore sends the calls made at once as one script run (${kind.name})`, function () {
    this.timeout(60_000)
    let server: RedisServer
    let admin: Redis
    let tested: TestClient
    before(async () => {
      // A server of its own: its command counts are this suite's alone.
      server = await startRedisServer()
      admin = new Redis(server.url)
      tested = await kind.connect(server.url)
    })
    after(async () => {
      await tested?.close()
      admin?.disconnect()
      await server?.stop()
    })
    beforeEach(() => admin.call('CONFIG', 'RESETSTAT'))

    /** A limiter of `limit` per minute named 'api', with no local tier, on the tested client under `prefix`. */
    const apiLimiter = (prefix: string, limit: number) =>
      createRateLimiter({
        store: redisStore(tested.client, { prefix }),
        name: 'api',
        limit,
        window: '1m',
        local: false,
        logger: quiet,
      })

    /** The script runs the server made since the last RESETSTAT (EVAL and EVALSHA). */
    async function scriptRuns(): Promise<number> {
      const calls = await commandCalls(admin)
      return calls('eval') + calls('evalsha')
    }

    it('100 calls on one key at once: the limit exactly, in runs of at most MAX_BATCH calls', async () => {
      const limiter = apiLimiter('hot', 60)
      const outcomes = await Promise.all(Array.from({ length: 100 }, () => outcome(limiter.consume('t'))))
      expect(outcomes.filter((o) => o === 'store admitted')).to.have.length(60)
      expect(outcomes.filter((o) => o === 'store denied')).to.have.length(40)
      expect(await scriptRuns()).to.equal(Math.ceil(100 / MAX_BATCH))
      expect(await tested.units('hot:api~sl3-60000:{t}')).to.equal(60)
    })

    it('the calls of one run on one key read its log once and write it once', async () => {
      const limiter = apiLimiter('once', 1_000)
      expect((await limiter.consume('t')).allowed).to.equal(true)
      await admin.call('CONFIG', 'RESETSTAT')
      const decisions = await Promise.all(Array.from({ length: MAX_BATCH }, () => limiter.consume('t')))
      expect(decisions.map((d) => d.remaining).sort((a, b) => b - a)).to.deep.equal(
        Array.from({ length: MAX_BATCH }, (_, i) => 998 - i),
      )
      const calls = await commandCalls(admin)
      expect([calls('evalsha') + calls('eval'), calls('getrange'), calls('setrange')]).to.deep.equal([1, 1, 1])
      expect(await tested.units('once:api~sl3-60000:{t}')).to.equal(1 + MAX_BATCH)
    })

    it('a broken key in the same run as other tenants’ calls fails its own calls alone', async () => {
      await admin.hset('mixed:api~sl3-60000:{broken}', 'not', 'a log')
      const limiter = apiLimiter('mixed', 3)
      const tenants = ['a', 'broken', 'b', 'broken', 'a', 'c', 'a', 'a']
      const outcomes = await Promise.all(tenants.map((tenant) => outcome(limiter.consume(tenant))))
      expect(await scriptRuns(), 'one run').to.equal(1)
      const wrongType =
        'ERR_FLEETLIMIT_STORE: ReplyError: WRONGTYPE Operation against a key holding the wrong kind of value'
      expect(outcomes).to.deep.equal([
        'store admitted',
        wrongType,
        'store admitted',
        wrongType,
        'store admitted',
        'store admitted',
        'store admitted',
        'store denied',
      ])
      expect(limiter.breakerState).to.equal('closed')
    })

    it('a key the ACL user may not touch fails its own calls alone, though the server refuses the whole run', async () => {
      await admin.call('ACL', 'SETUSER', 'batch', 'on', '>pw', 'resetkeys', '~acl:ok*', '+@all')
      const limited = await kind.connect(server.url.replace('redis://', 'redis://batch:pw@'))
      try {
        const store = redisStore(limited.client, { prefix: 'acl' })
        const allowed = createRateLimiter({ store, name: 'ok', limit: 2, window: '1m', local: false, logger: quiet })
        const denied = createRateLimiter({ store, name: 'no', limit: 2, window: '1m', local: false, logger: quiet })
        const outcomes = await Promise.all([
          outcome(allowed.consume('t')),
          outcome(denied.consume('t')),
          outcome(allowed.consume('t')),
          outcome(allowed.consume('t')),
        ])
        expect(outcomes[1]).to.match(/^ERR_FLEETLIMIT_STORE: .*NOPERM/)
        expect([outcomes[0], outcomes[2], outcomes[3]]).to.deep.equal([
          'store admitted',
          'store admitted',
          'store denied',
        ])
        expect(await limited.units('acl:ok~sl3-60000:{t}')).to.equal(2)
      } finally {
        await limited.close()
      }
    })

    it('10,000 calls at once over 500 tenants: each tenant’s limit exactly, no run over MAX_BATCH calls', async () => {
      const limiter = createRateLimiter({
        store: redisStore(tested.client, { prefix: 'burst' }),
        limit: 7,
        window: '1m',
        local: false,
        timeoutMs: 10_000,
      })
      const tenants = Array.from({ length: 10_000 }, (_, i) => `t${i % 500}`)
      const outcomes = await Promise.all(tenants.map((tenant) => outcome(limiter.consume(tenant))))
      const admitted = new Map<string, number>()
      tenants.forEach((tenant, i) => {
        if (outcomes[i] === 'store admitted') admitted.set(tenant, (admitted.get(tenant) ?? 0) + 1)
      })
      expect(outcomes.filter((o) => o !== 'store admitted' && o !== 'store denied')).to.deep.equal([])
      expect([...new Set(admitted.values())]).to.deep.equal([7])
      expect(admitted.size).to.equal(500)
      expect(await scriptRuns()).to.be.at.least(Math.ceil(10_000 / MAX_BATCH))
    })
  })
}
