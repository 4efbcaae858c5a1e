// Valkey's own clients on a 3-master Redis Cluster: GLIDE's GlideClusterClient (which keeps its slot map to itself)
// and iovalkey's Cluster, through the suites the other cluster clients pass.
import { createRateLimiter, redisStore } from '@fleetlimit/core'
import { keySlot, type RedisCluster, startRedisCluster } from '@fleetlimit/test-kit/redis-cluster'
import { expect } from 'chai'
import { adaptClient } from '../../packages/core/src/store/clients/adapt-client.js'
import { describeStoreConformance } from '../support/conformance.js'
import { describeHoldsAndRefunds } from '../support/holds.js'
import { describePlans } from '../support/plans.js'
import { type TestClient, uniquePrefix, valkeyKinds } from '../support/redis.js'

describe('Valkey clients on a Redis Cluster of three masters, started by the test', function () {
  this.timeout(120_000)
  let cluster: RedisCluster

  before(async function () {
    this.timeout(60_000)
    cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 0 })
  })
  after(async () => {
    await cluster?.stop()
  })

  for (const kind of valkeyKinds) {
    describe(`through a ${kind.name} cluster client`, () => {
      let tested: TestClient
      before(async () => {
        tested = await kind.connectCluster(cluster.startupNodes)
      })
      after(() => tested?.close())
      const make = () => redisStore(tested.client, { prefix: uniquePrefix() })

      describeStoreConformance(`redisStore on a ${kind.name} cluster`, make)
      describePlans(`redisStore on a ${kind.name} cluster`, make)
      describeHoldsAndRefunds(`redisStore on a ${kind.name} cluster`, make)

      it('keeps one breaker per master: each key’s server is the master the cluster names for its slot', async () => {
        const adapter = adaptClient(tested.client)
        // GLIDE's map is read with CLUSTER SLOTS when the adapter is made: a store made at once may ask before.
        redisStore(tested.client)
        for (let tries = 0; adapter?.serverOf('p:n:{t}:r') === ''; tries++) {
          if (tries > 200) throw new Error('the slot map was never read')
          await new Promise((resolve) => setTimeout(resolve, 5))
        }
        const masters = new Set<string>()
        for (let i = 0; i < 30; i++) {
          const key = `p:n:{tenant-${i}}:r`
          const server = adapter?.serverOf(key) ?? ''
          expect(server).to.equal(`127.0.0.1:${(await cluster.masterOf(keySlot(key))).port}`)
          masters.add(server)
        }
        expect(masters.size).to.equal(3)
      })

      it('20 concurrent calls over tenants on every master: each tenant’s limit exactly', async () => {
        const limiter = createRateLimiter({ store: make(), limit: 3, window: '1m', local: false })
        const tenants = Array.from({ length: 6 }, (_, i) => `t${i}`)
        const decisions = await Promise.all(
          tenants.flatMap((tenant) =>
            Array.from({ length: 20 }, () => limiter.consume(tenant).then((d) => ({ tenant, allowed: d.allowed }))),
          ),
        )
        for (const tenant of tenants) {
          expect(
            decisions.filter((d) => d.tenant === tenant && d.allowed),
            tenant,
          ).to.have.length(3)
        }
      })

      it('a reset in one process reaches another’s local tier, through its own subscriber', async () => {
        const other = await kind.connectCluster(cluster.startupNodes)
        try {
          const prefix = uniquePrefix()
          const policy = { limit: 2, window: '1m', logger: { warn() {}, info() {} } } as const
          const storeB = redisStore(other.client, { prefix })
          const a = createRateLimiter({ store: redisStore(tested.client, { prefix }), ...policy })
          const b = createRateLimiter({ store: storeB, ...policy })
          let wake: () => void = () => {}
          const changed = new Promise<void>((resolve) => (wake = resolve))
          // Held weakly by the store: kept alive by this test.
          const listener = () => wake()
          storeB.onKeyChange?.(listener)
          await b.consume('k')
          await b.consume('k')
          expect(await b.consume('k')).to.include({ allowed: false, source: 'store' })
          expect(await b.consume('k')).to.include({ allowed: false, source: 'local' })
          // The subscriber subscribes on its own: a reset sent before it listens would not be heard.
          for (let tries = 0; ; tries++) {
            await a.reset('k')
            const heard = await Promise.race([changed.then(() => true), sleepMs(50).then(() => false)])
            if (heard) break
            if (tries > 100) throw new Error('the reset never reached the other process')
          }
          expect(await b.consume('k')).to.include({ allowed: true, source: 'store' })
          expect(listener).to.be.a('function')
        } finally {
          await other.close()
        }
      })
    })
  }
})

const sleepMs = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
