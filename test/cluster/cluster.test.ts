import { once } from 'node:events'
import { createRateLimiter, type Decision, redisStore, StoreError } from '@fleetlimit/core'
import { runFleet } from '@fleetlimit/test-kit/fleet'
import { maxInWindow } from '@fleetlimit/test-kit/recording-store'
import { keySlot, type RedisCluster, startRedisCluster } from '@fleetlimit/test-kit/redis-cluster'
import { sleep } from '@fleetlimit/test-kit/sleep'
import { expect } from 'chai'
import { Cluster } from 'ioredis'
import sinon from 'sinon'
import { adaptClient } from '../../packages/core/src/store/clients/adapt-client.js'
import type { ClientAdapter } from '../../packages/core/src/store/clients/client-adapter.js'
import { describeStoreConformance } from '../support/conformance.js'
import { describeHoldsAndRefunds } from '../support/holds.js'
import { describePlans } from '../support/plans.js'
import { commandCalls, nodeRedisKinds, type TestClient, uniquePrefix } from '../support/redis.js'

/** Moves one slot from master `from` to master `to` (node ids) with `redis-cli --cluster reshard`, via `port`. */
const moveOneSlot = (cli: (...args: string[]) => Promise<string>, port: number | string, from: string, to: string) =>
  cli(
    '--cluster',
    'reshard',
    `127.0.0.1:${port}`,
    '--cluster-from',
    from,
    '--cluster-to',
    to,
    '--cluster-slots',
    '1',
    '--cluster-yes',
  )

describe('Redis Cluster: three masters, one replica each, started by the test', function () {
  this.timeout(120_000)
  let cluster: RedisCluster
  let client: Cluster

  before(async function () {
    this.timeout(60_000)
    cluster = await startRedisCluster()
    client = new Cluster(cluster.startupNodes)
    client.on('error', () => {})
    // The failover test kills a node: its connection's errors are expected, not news.
    client.on('node error', () => {})
    await once(client, 'ready')
  })
  after(async () => {
    client.disconnect()
    await cluster?.stop()
  })

  describe('conformance', () => {
    describeStoreConformance('redisStore on a Cluster', () => redisStore(client, { prefix: uniquePrefix() }))
    describePlans('redisStore on a Cluster', () => redisStore(client, { prefix: uniquePrefix() }))
    describeHoldsAndRefunds('redisStore on a Cluster', () => redisStore(client, { prefix: uniquePrefix() }))
  })

  it('computes every key’s slot as the cluster does (CLUSTER KEYSLOT), hash tags, unicode and braces included', async () => {
    const keys = ['plain', 'a:{tenant}:b', 'a:{}:b', '{}', '{a}{b}', 'x{y', 'é:{ünï}', '{%u00E9}', 'p:n:{😀}:r']
    for (let i = 0; i < 40; i++) keys.push(`fleetlimit:policy-${i}:{tenant-${i * 7919}}:GET%20/x`)
    for (const key of keys) {
      expect(keySlot(key), key).to.equal(Number(await client.cluster('KEYSLOT', key)))
    }
  })

  it('a reset through one cluster client reaches the local tier on another at once', async () => {
    const other = new Cluster(cluster.startupNodes)
    other.on('error', () => {})
    await once(other, 'ready')
    try {
      const prefix = uniquePrefix()
      const policy = { limit: 2, window: '1m', logger: { warn() {}, info() {} } } as const
      const watched = redisStore(client, { prefix })
      const a = createRateLimiter({ store: redisStore(other, { prefix }), ...policy })
      const b = createRateLimiter({ store: watched, ...policy })
      let announced: (() => void) | undefined
      // Held weakly by the store: `heard` keeps it, and says what the last message named.
      const heard = {
        keys: undefined as readonly string[] | undefined,
        listener: (keys: readonly string[] | undefined) => {
          heard.keys = keys
          announced?.()
        },
      }
      watched.onKeyChange?.(heard.listener)
      const next = () => new Promise<void>((resolve) => (announced = resolve))
      // The subscriber subscribes on its own: an operator's message for every key shows when it listens.
      for (let tries = 0; ; tries++) {
        const message = next()
        await client.publish(`${prefix}:changed`, '*')
        const listening = await Promise.race([message.then(() => true), sleep(20).then(() => false)])
        if (listening) break
        if (tries > 250) throw new Error('the subscriber never subscribed')
      }
      for (let i = 0; i < 3; i++) await b.consume('k')
      expect(await b.consume('k')).to.include({ allowed: false, source: 'local' })
      const message = next()
      await a.reset('k')
      await message
      expect(heard.keys).to.deep.equal(['2-per-60000ms~sl3-60000:{k}'])
      expect(await b.consume('k')).to.include({ allowed: true, source: 'store' })
    } finally {
      other.disconnect()
    }
  })

  it('spreads tenants over every master and keeps each tenant’s keys in one slot', async () => {
    const prefix = uniquePrefix()
    const limiter = createRateLimiter({
      store: redisStore(client, { prefix }),
      policies: [
        { name: 'global', limit: 10, window: '1m', scope: 'tenant' },
        { name: 'route', limit: 5, window: '1m' },
      ],
      local: { lease: 'auto' },
    })
    const masters = new Set<number>()
    for (let i = 0; i < 30; i++) {
      const tenant = `tenant-${i}`
      expect((await limiter.consume({ tenant, route: 'GET /x' })).allowed).to.equal(true)
      const global = Number(await cluster.cli('cluster', 'keyslot', `${prefix}:global:{${tenant}}`))
      const route = Number(await cluster.cli('cluster', 'keyslot', `${prefix}:route:{${tenant}}:GET%20/x`))
      expect(route).to.equal(global)
      masters.add((await cluster.masterOf(global)).port)
    }
    expect(masters.size).to.equal(3)
  })

  it('calls made at once for tenants on every master go one run per slot: each decided by the store', async () => {
    const limiter = createRateLimiter({
      store: redisStore(client, { prefix: uniquePrefix() }),
      limit: 2,
      window: '1m',
      local: false,
      timeoutMs: 10_000,
    })
    const tenants = Array.from({ length: 900 }, (_, i) => `tenant-${i % 300}`)
    const decisions = await Promise.all(tenants.map((tenant) => limiter.consume(tenant)))
    expect(decisions.filter((d) => d.source !== 'store')).to.deep.equal([])
    expect(decisions.filter((d) => d.allowed)).to.have.length(600)
    expect(limiter.stats()).to.include({ storeErrors: 0 })
  })

  it('a cold burst on every master sends the script text once to each: one EVAL per master', async () => {
    const masters = client.nodes('master')
    await Promise.all(masters.map((node) => node.config('RESETSTAT')))
    const limiter = createRateLimiter({
      store: redisStore(client, { prefix: uniquePrefix() }),
      limit: 1_000,
      window: '1m',
      local: false,
      timeoutMs: 10_000,
    })
    const decisions = await Promise.all(Array.from({ length: 2_000 }, (_, i) => limiter.consume(`tenant-${i % 300}`)))
    expect(decisions.filter((d) => d.source !== 'store')).to.deep.equal([])
    const evals = await Promise.all(masters.map(async (node) => (await commandCalls(node))('eval')))
    expect(evals).to.deep.equal([1, 1, 1])
  })

  it('a consume finds its key’s master once: the guard’s lookup routes the script and reads that master’s clock', async () => {
    const serverOf = sinon.spy(adaptClient(client) as ClientAdapter, 'serverOf')
    try {
      const limiter = createRateLimiter({
        store: redisStore(client, { prefix: uniquePrefix() }),
        limit: 10,
        window: '1m',
        local: false,
        timeoutMs: 10_000,
      })
      const tenants = ['acme', 'globex', 'initech', 'umbrella']
      // The first call of each sends the script's text to its master (if none had it yet).
      await Promise.all(tenants.map((tenant) => limiter.consume(tenant)))
      serverOf.resetHistory()
      for (const tenant of tenants) {
        const decision = await limiter.consume(tenant)
        expect([decision.source, decision.remaining], tenant).to.deep.equal(['store', 8])
      }
      expect(serverOf.callCount).to.equal(tenants.length)
      expect(limiter.stats()).to.include({ storeErrors: 0 })
    } finally {
      serverOf.restore()
    }
  })

  it('runs leases and the bucketed algorithm on the cluster', async () => {
    const prefix = uniquePrefix()
    const leased = createRateLimiter({
      store: redisStore(client, { prefix }),
      limit: 20,
      window: '1m',
      local: { lease: 5 },
    })
    const sources = []
    for (let i = 0; i < 6; i++) sources.push((await leased.consume('t')).source)
    expect(sources).to.deep.equal(['store', 'local', 'local', 'local', 'local', 'store'])
    const bucketed = createRateLimiter({
      store: redisStore(client, { prefix }),
      limit: 2,
      window: '1m',
      algorithm: 'bucketed',
    })
    const decisions = [await bucketed.consume('t'), await bucketed.consume('t'), await bucketed.consume('t')]
    expect(decisions.map((d) => d.allowed)).to.deep.equal([true, true, false])
  })

  it('a slot key shares its tenant’s slot with the rate keys: a consume, a free and a settle are one call each', async () => {
    const prefix = uniquePrefix()
    const store = redisStore(client, { prefix })
    const keys = { rpm: 'rpm~sl3-60000:{acme}', tpm: 'tpm~sl3-60000:{acme}', slots: 'parallel~if1-60000:{acme}' }
    const slots = new Set(Object.values(keys).map((key) => keySlot(`${prefix}:${key}`)))
    expect(slots.size).to.equal(1)
    const masters = client.nodes('master')
    const scriptCalls = async () => {
      const calls = await Promise.all(
        masters.map(async (node) => {
          const count = await commandCalls(node)
          return count('evalsha') + count('eval')
        }),
      )
      return calls.reduce((sum, n) => sum + n, 0)
    }
    await Promise.all(masters.map((node) => node.config('RESETSTAT')))
    const requests = [
      { key: keys.rpm, limit: 10, windowMs: 60_000, cost: 1 },
      { key: keys.tpm, limit: 1_000, windowMs: 60_000, cost: 400 },
      { key: keys.slots, limit: 1, windowMs: 60_000, cost: 1, slots: true },
    ]
    const admitted = await store.consume(requests)
    expect(admitted.map((r) => [r.allowed, r.remaining])).to.deep.equal([
      [true, 9],
      [true, 600],
      [true, 0],
    ])
    const settled = await store.settle?.(
      [keys.rpm, keys.tpm].map((key, i) => ({
        key,
        windowMs: 60_000,
        recorded: admitted[i]?.recorded as number,
        delta: i === 1 ? -300 : 0,
      })),
      'id-1',
    )
    expect(settled).to.deep.equal({ outcome: 'settled', used: [1, 100] })
    expect(await store.free?.([{ key: keys.slots, slot: admitted[2]?.recorded as number }])).to.equal(1)
    expect((await store.consume(requests)).map((r) => r.allowed)).to.deep.equal([true, true, true])
    expect(await scriptCalls(), 'one script call each, however many keys').to.equal(4)
  })

  it('a fleet of four processes on one key never exceeds the limit', async () => {
    const report = await runFleet({
      redisUrl: '',
      cluster: cluster.startupNodes,
      limit: 100,
      windowMs: 1_000,
      durationMs: 2_000,
      skewsMs: [0, 0, 0, 0],
    })
    expect(report.maxInWindow).to.be.at.most(100)
    expect(report.inWholeWindows).to.be.at.least(0.95 * report.idealInWholeWindows)
  })

  it('moves the slot of a hot key during load with redis-cli --cluster reshard: no error, the limit holds', async () => {
    const prefix = uniquePrefix()
    const limiter = createRateLimiter({
      store: redisStore(client, { prefix }),
      limit: 200,
      window: '2s',
      timeoutMs: 2_000,
      local: false,
    })
    // reshard moves a master's lowest slots first: put the hot tenant in the lowest slot of a master.
    const { lowestSlot, id: from } = await cluster.masterOf(0)
    let i = 0
    while (keySlot(`{hot-${i}}`) !== lowestSlot) i++
    const tenant = `hot-${i}`
    expect(await cluster.cli('cluster', 'keyslot', `${prefix}:200-per-2000ms~sl3-2000:{${tenant}}`)).to.include(
      String(lowestSlot),
    )
    const to = (await cluster.masterOf(16_383)).id
    const admitted: number[] = []
    const errors: unknown[] = []
    let running = true
    const load = (async () => {
      while (running) {
        await limiter.consume(tenant).then(
          (d: Decision) => {
            if (d.allowed) admitted.push(performance.now())
          },
          (e: unknown) => errors.push(e),
        )
      }
    })()
    await sleep(300)
    const node = cluster.startupNodes[0] as { port: number }
    await moveOneSlot(cluster.cli, node.port, from, to)
    await sleep(300)
    running = false
    await load
    expect((await cluster.masterOf(lowestSlot)).id, 'the hot key’s slot moved').to.equal(to)
    expect(await client.exists(`${prefix}:200-per-2000ms~sl3-2000:{${tenant}}`), 'the window moved with it').to.equal(1)
    expect(errors).to.deep.equal([])
    expect(admitted.length).to.be.at.least(200)
    // Noted on this process's clock after each answer: allow 5 ms of it.
    expect(maxInWindow(admitted, 2_000 - 5)).to.be.at.most(200)
  })
  // Last: it kills a master, and the cluster serves on with that master's former replica.
  it('kills the master of a hot key during load: the failure policy decides until its replica is promoted, then the store', async () => {
    const prefix = uniquePrefix()
    const policy = { limit: 1_000_000, window: '1m', timeoutMs: 200, local: false, logger: { warn() {} } } as const
    const failOpen = createRateLimiter({
      ...policy,
      store: redisStore(client, { prefix }),
      onStoreError: 'fail-open',
      fallback: { limit: 50 },
    })
    const failClosed = createRateLimiter({ ...policy, store: redisStore(client, { prefix: uniquePrefix() }) })
    const tenant = 'hot'
    const dying = await cluster.masterOf(keySlot(`{${tenant}}`))
    // A tenant on another master: its breaker is that master's, so it keeps store decisions throughout.
    let j = 0
    while ((await cluster.masterOf(keySlot(`{other-${j}}`))).id === dying.id) j++
    const other = `other-${j}`
    const otherSources = new Set<string>()
    const replicaLine = (await cluster.cli('cluster', 'nodes')).split('\n').find((l) => l.includes(`slave ${dying.id}`))
    const replicaId = replicaLine?.split(' ')[0]
    expect(replicaId, 'the hot key’s master has a replica').to.be.a('string')

    let killed = false
    const sources: string[] = []
    let fallbackAdmitted = 0
    const closedFailures: unknown[] = []
    const thrown: unknown[] = []
    let backToStore: () => void = () => {}
    const back = new Promise<void>((resolve) => {
      backToStore = resolve
    })
    let running = true
    const caller = async () => {
      while (running) {
        const decision = await failOpen.consume(tenant).catch((e: unknown) => thrown.push(e))
        await failClosed.consume(tenant).catch((e: unknown) => killed && closedFailures.push(e))
        const otherDecision = await failOpen.consume(other)
        if (killed) otherSources.add(otherDecision.source)
        if (killed && typeof decision === 'object') {
          sources.push(decision.source)
          if (decision.source === 'fallback' && decision.allowed) fallbackAdmitted++
          if (decision.source === 'store' && sources.includes('fallback')) backToStore()
        }
        await sleep(5)
      }
    }
    const callers = Array.from({ length: 8 }, caller)
    await sleep(300)
    killed = true
    await cluster.nodes.find((node) => node.port === dying.port)?.stop()
    await back
    running = false
    await Promise.all(callers)

    // Asked of the promoted replica itself: the other nodes may learn of the failover a moment later.
    const replicaPort = Number(/:(\d+)@/.exec(replicaLine ?? '')?.[1])
    expect(
      (await cluster.masterOf(keySlot(`{${tenant}}`), replicaPort)).id,
      'the replica now serves the slot',
    ).to.equal(replicaId)
    expect(thrown, 'failing open, no caller saw an error').to.deep.equal([])
    // From the first decision without the store to the first one with it again (calls in flight at the kill may still succeed).
    const start = sources.indexOf('fallback')
    const outage = sources.slice(start, sources.indexOf('store', start))
    expect(outage.length).to.be.greaterThan(0)
    expect(new Set(outage), 'while no primary answered: the fallback window decided').to.deep.equal(
      new Set(['fallback']),
    )
    expect(fallbackAdmitted, 'under the strict per-process fallback limit').to.be.within(1, 50)
    expect([...otherSources], 'a tenant on a live master: the store decided throughout').to.deep.equal(['store'])
    expect(failOpen.stats().breakerOpenings, 'the dead master’s breaker opened').to.be.at.least(1)
    expect(closedFailures.length, 'failing closed: the other limiter refused with StoreErrors').to.be.greaterThan(0)
    for (const failure of closedFailures) expect(failure).to.be.instanceOf(StoreError)
    expect(failOpen.stats().degraded).to.equal(sources.filter((s) => s !== 'store').length)
  })

  // The same cluster through node-redis: its own slot map, MOVED and ASK, and topology refresh. Child suites run
  // after the tests above, so after the ioredis failover: a cluster with one master fewer among the nodes.
  for (const kind of nodeRedisKinds) {
    describe(`through a ${kind.name} cluster`, () => {
      let tested: TestClient
      before(async () => {
        tested = await kind.connectCluster(cluster.startupNodes)
        // A killed node's connection errors are expected here, not news (node-redis 6 reports them so).
        ;(tested.client as unknown as { on(event: string, listener: () => void): void }).on('node-error', () => {})
      })
      after(() => tested?.close())
      const make = () => redisStore(tested.client, { prefix: uniquePrefix() })
      // Asked of a node still alive: a failover above killed one (and a killed process has a signal, no exit code).
      const livePort = () =>
        String(cluster.nodes.find((n) => n.process.exitCode === null && n.process.signalCode === null)?.port)
      const liveCli = (...args: string[]) => cluster.cli('-p', livePort(), ...args)
      const masterOf = (slot: number) => cluster.masterOf(slot, Number(livePort()))

      describeStoreConformance(`redisStore on a ${kind.name} cluster`, make)
      describePlans(`redisStore on a ${kind.name} cluster`, make)
      // A node-redis cluster has no subscriber: resets and pauses reach other local tiers on a single server only.
      describeHoldsAndRefunds(`redisStore on a ${kind.name} cluster`, make, { hearsChanges: false })

      it('keeps one breaker per master: each key’s server is the master the cluster names for its slot', async () => {
        const adapter = adaptClient(tested.client)
        const masters = new Set<string>()
        for (let i = 0; i < 30; i++) {
          const key = `p:n:{tenant-${i}}:r`
          const server = adapter?.serverOf(key) ?? ''
          expect(server).to.equal(`127.0.0.1:${(await masterOf(keySlot(key))).port}`)
          masters.add(server)
        }
        expect(masters.size).to.equal(3)
      })

      it('moves the slot of a hot key during load: node-redis follows MOVED and ASK, no error, the limit holds', async () => {
        const prefix = uniquePrefix()
        const limiter = createRateLimiter({
          store: redisStore(tested.client, { prefix }),
          limit: 200,
          window: '2s',
          timeoutMs: 2_000,
          local: false,
        })
        const { lowestSlot, id: from } = await masterOf(keySlot('{any}'))
        let i = 0
        const tag = kind.name.replace(/[^a-z0-9]/g, '')
        while (keySlot(`{hot-${tag}-${i}}`) !== lowestSlot) i++
        const tenant = `hot-${tag}-${i}`
        let to = from
        for (let slot = 0; to === from; slot += 997) to = (await masterOf(slot)).id
        const admitted: number[] = []
        const errors: unknown[] = []
        let moved = false
        let decidedAfterMove = 0
        let underWay: () => void = () => {}
        const started = new Promise<void>((resolve) => {
          underWay = resolve
        })
        // Until the slot has moved, 50 decisions were made after the move, and the limit was reached (or a call failed).
        const load = (async () => {
          while (errors.length === 0 && (!moved || decidedAfterMove < 50 || admitted.length < 200)) {
            await limiter.consume(tenant).then(
              (d: Decision) => {
                if (d.allowed) admitted.push(performance.now())
                if (moved) decidedAfterMove++
              },
              (e: unknown) => errors.push(e),
            )
            if (admitted.length === 20) underWay()
          }
          underWay()
        })()
        await started
        await moveOneSlot(liveCli, livePort(), from, to)
        moved = true
        await load
        const master = await masterOf(lowestSlot)
        expect(master.id, 'the hot key’s slot moved').to.equal(to)
        // Told by a MOVED reply: the key's calls now go to (and their breaker is) the new master.
        expect(adaptClient(tested.client)?.serverOf(`${prefix}:x:{${tenant}}`)).to.equal(`127.0.0.1:${master.port}`)
        expect(errors).to.deep.equal([])
        expect(admitted.length).to.be.at.least(200)
        expect(maxInWindow(admitted, 2_000 - 5)).to.be.at.most(200)
      })

      if (kind.name === 'node-redis 6') {
        // node-redis 5.0's cluster never looks for a dead master's successor (no reply, so no MOVED): it is not run there.
        it('kills the master of a hot key: the fallback decides until node-redis finds the promoted replica, then the store', async () => {
          const policy = {
            limit: 1_000_000,
            window: '1m',
            timeoutMs: 200,
            local: false,
            logger: { warn() {} },
          } as const
          const limiter = createRateLimiter({
            ...policy,
            store: redisStore(tested.client, { prefix: uniquePrefix() }),
            onStoreError: 'fail-open',
            fallback: { limit: 50 },
          })
          // A master that still has a live replica to promote, and a tenant on it and one on another master.
          const nodes = (await liveCli('cluster', 'nodes')).split('\n').map((line) => line.split(' '))
          const replicaOf = (id: string) =>
            nodes.find((f) => f[3] === id && f[2]?.includes('slave') && !f[2].includes('fail'))
          let i = 0
          let dying = await masterOf(keySlot(`{hot-${i}}`))
          while (!replicaOf(dying.id)) dying = await masterOf(keySlot(`{hot-${++i}}`))
          const tenant = `hot-${i}`
          let j = 0
          while ((await masterOf(keySlot(`{other-${j}}`))).id === dying.id) j++
          const other = `other-${j}`
          const replica = replicaOf(dying.id) as string[]
          expect((await limiter.consume(tenant)).source).to.equal('store')

          await cluster.nodes.find((node) => node.port === dying.port)?.stop()
          const sources: string[] = []
          const otherSources = new Set<string>()
          while (!(sources.includes('fallback') && sources.at(-1) === 'store')) {
            sources.push((await limiter.consume(tenant)).source)
            otherSources.add((await limiter.consume(other)).source)
            await sleep(5)
          }
          const replicaPort = Number(/:(\d+)@/.exec(replica[1] ?? '')?.[1])
          expect(
            (await cluster.masterOf(keySlot(`{${tenant}}`), replicaPort)).id,
            'the replica serves the slot',
          ).to.equal(replica[0])
          expect(
            new Set(sources.slice(sources.indexOf('fallback'), -1)),
            'the fallback decided meanwhile',
          ).to.deep.equal(new Set(['fallback']))
          expect([...otherSources], 'a tenant on a live master: the store decided throughout').to.deep.equal(['store'])
          expect(limiter.stats().breakerOpenings, 'the dead master’s breaker opened').to.be.at.least(1)
        })
      }
    })
  }
})
