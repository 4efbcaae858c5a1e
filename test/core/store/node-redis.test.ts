import { createRateLimiter, isFleetlimitError, type OptionError, redisStore, type StoreError } from '@fleetlimit/core'
import { type RedisServer, startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { expect } from 'chai'
import { Redis } from 'ioredis'
import * as redis6 from 'redis'
import * as redis5 from 'redis-5'
import { adaptClient } from '../../../packages/core/src/store/clients/adapt-client.js'
import type { ClientAdapter } from '../../../packages/core/src/store/clients/client-adapter.js'
import { asIoredisError } from '../../../packages/core/src/store/clients/reply-errors.js'
import { isServerFailure } from '../../../packages/core/src/store/server-failure.js'
import { commandCalls, nodeRedisKinds, uniquePrefix } from '../../support/redis.js'
import { redisUrl } from '../../support/root-hooks.js'

// What is particular to node-redis behind redisStore: how a client is told from others, its connection states, its
// errors as the breaker reads them, and its scripts' loading. The shared suites (conformance, plans, holds, faults)
// run on it as on ioredis, through test/support/stores.ts and test/support/redis.ts.
const libraries = [
  { name: 'node-redis 6', redis: redis6 },
  { name: 'node-redis 5', redis: redis5 as unknown as typeof redis6 },
] as const

const quiet = { warn() {}, info() {} }
const nextReady = (client: { once(event: 'ready', listener: () => void): unknown }) =>
  new Promise<void>((resolve) => client.once('ready', resolve))
const nextError = (client: { once(event: 'error', listener: (error: unknown) => void): unknown }) =>
  new Promise<unknown>((resolve) => client.once('error', resolve))

describe('redisStore(client): which clients it takes', () => {
  it('refuses anything else, naming both libraries: a plain object, a node-redis pool or sentinel, node-redis 4', () => {
    const refused = [
      {},
      redis6.createClientPool({ url: 'redis://127.0.0.1:1' }),
      redis6.createSentinel({ name: 'primary', sentinelRootNodes: [{ host: '127.0.0.1', port: 1 }] }),
      // node-redis 4's client: sendCommand and isOpen, but no type mapping (it returned Buffers another way).
      { sendCommand: async () => null, isOpen: true, isReady: true, on() {}, listenerCount: () => 0 },
    ]
    for (const client of refused) {
      let error: unknown
      try {
        redisStore(client as never)
      } catch (e) {
        error = e
      }
      expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION'), String(error)).to.equal(true)
      expect((error as OptionError).option).to.equal('redisStore(client)')
      expect((error as Error).message).to.include(
        'an ioredis (or iovalkey) Redis or Cluster, a node-redis client or cluster, or a @valkey/valkey-glide GlideClient or GlideClusterClient',
      )
    }
  })

  it('takes ioredis and node-redis 5 and 6 clients and clusters, none of them connected, without a command', () => {
    const clients = [
      new Redis({ lazyConnect: true }),
      redis6.createClient(),
      redis5.createClient(),
      redis6.createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:1' }] }),
      redis5.createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:1' }] }),
    ]
    for (const client of clients) {
      const store = redisStore(client as never)
      // Not connected: a node-redis client refuses commands before connect(), so none is sent.
      expect(store.isConnected?.(), client.constructor.name).to.equal(client instanceof Redis)
    }
  })
})

describe('node-redis errors, as the breaker reads them', () => {
  for (const { name, redis } of libraries) {
    it(`an error reply becomes a ReplyError with its code; a lost connection stays what it is (${name})`, () => {
      const busy = asIoredisError(new redis.SimpleError('BUSY Redis is busy running a script.'))
      expect(busy).to.include({ name: 'ReplyError', message: 'BUSY Redis is busy running a script.' })
      expect(isServerFailure(busy)).to.equal(true)
      for (const code of ['LOADING', 'MASTERDOWN', 'CLUSTERDOWN', 'TRYAGAIN', 'NOAUTH', 'WRONGPASS']) {
        expect(isServerFailure(asIoredisError(new redis.SimpleError(`${code} now`))), code).to.equal(true)
      }
      for (const code of ['WRONGTYPE', 'NOPERM', 'OOM', 'READONLY', 'ERR']) {
        const error = asIoredisError(new redis.SimpleError(`${code} about this call`))
        expect((error as Error).name, code).to.equal('ReplyError')
        expect(isServerFailure(error), code).to.equal(false)
      }
      const lost = new redis.SocketClosedUnexpectedlyError()
      expect(asIoredisError(lost)).to.equal(lost)
      expect(isServerFailure(lost)).to.equal(true)
      expect(isServerFailure(asIoredisError(new redis.ClientClosedError()))).to.equal(true)
    })
  }

  it('reads the reply from the message when a bundler renamed the classes; a protocol error is a lost connection', () => {
    class Renamed extends Error {}
    expect(asIoredisError(new Renamed('WRONGTYPE Operation against a key'))).to.include({ name: 'ReplyError' })
    const renamedLost = new Renamed('Socket closed unexpectedly')
    expect(asIoredisError(renamedLost)).to.equal(renamedLost)
    // Redis closes the connection after it: node-redis meets it behind a refused AUTH.
    const protocol = new redis6.SimpleError('ERR Protocol error: unauthenticated bulk length')
    expect(isServerFailure(asIoredisError(protocol))).to.equal(true)
  })

  for (const { name, redis } of libraries) {
    it(`a BUSY server opens the breaker; a WRONGTYPE key does not (${name})`, async function () {
      this.timeout(20_000)
      const server = await startRedisServer(['--busy-reply-threshold', '50'])
      const admin = new Redis(server.url)
      const prober = new Redis(server.url, { maxRetriesPerRequest: 0 })
      const client = redis.createClient({ url: server.url })
      client.on('error', () => {})
      try {
        await client.connect()
        const store = redisStore(client, { breaker: { failureThreshold: 1, cooldownMs: 60_000 } })
        const limiter = createRateLimiter({ store, limit: 10, window: '1m', timeoutMs: 2_000, logger: quiet })
        await admin.hset('fleetlimit:10-per-60000ms~sl3-60000:{broken}', 'not', 'a log')
        const wrongType = (await limiter.consume('broken').catch((e: unknown) => e)) as StoreError
        expect(String(wrongType.cause)).to.match(/^ReplyError: WRONGTYPE/)
        expect(limiter.breakerState).to.equal('closed')

        // A script that never ends; once past the threshold, the server answers BUSY to everyone else.
        admin.eval('while true do end', 0).catch(() => {})
        for (;;) {
          const reply = await prober.ping().catch((e: Error) => e.message)
          if (String(reply).startsWith('BUSY')) break
        }
        const busy = (await limiter.consume('tenant').catch((e: unknown) => e)) as StoreError
        expect(isFleetlimitError(busy, 'ERR_FLEETLIMIT_STORE')).to.equal(true)
        expect(String(busy.cause)).to.match(/^ReplyError: BUSY/)
        expect(limiter.breakerState).to.equal('open')
        expect(limiter.stats()).to.include({ storeErrors: 2, breakerOpenings: 1 })
        await prober.call('SCRIPT', 'KILL')
      } finally {
        client.destroy()
        admin.disconnect()
        prober.disconnect()
        await server.stop()
      }
    })
  }
})

describe('node-redis connection states, as the limiter reads them', () => {
  for (const { name, redis } of libraries) {
    describe(name, () => {
      let server: RedisServer
      beforeEach(async () => {
        server = await startRedisServer()
      })
      afterEach(() => server.stop())

      it('not connected before connect(); sent while connecting; ready; lost while retried; ready again; closed', async function () {
        this.timeout(20_000)
        const client = redis.createClient({ url: server.url })
        client.on('error', () => {})
        const store = redisStore(client)
        const limiter = createRateLimiter({ store, limit: 100, window: '1m', logger: quiet })
        try {
          expect(store.isConnected?.(), 'before connect()').to.equal(false)
          expect(store.readySince?.()).to.equal(undefined)
          const refused = (await limiter.consume('t').catch((e: unknown) => e)) as StoreError
          expect(refused.message).to.include('the store is not connected')

          const connecting = client.connect()
          expect(store.isConnected?.(), 'while connecting').to.equal(true)
          expect(store.readySince?.()).to.equal(Number.POSITIVE_INFINITY)
          // Sent while connecting: node-redis queues it until the connection is ready.
          const early = limiter.consume('t')
          await connecting
          expect((await early).source).to.equal('store')
          const readyAt = store.readySince?.() as number
          expect(readyAt).to.be.below(performance.now())
          expect(store.lastError?.()).to.equal(undefined)

          const lost = nextError(client)
          await server.stop()
          expect(await lost).to.be.instanceOf(Error)
          expect(store.isConnected?.(), 'lost').to.equal(false)
          expect(store.readySince?.()).to.equal(undefined)
          const shortCircuit = (await limiter.consume('t').catch((e: unknown) => e)) as StoreError
          expect(shortCircuit.message).to.match(/the store is not connected \(the client's last error: /)
          expect(shortCircuit.cause).to.equal(store.lastError?.())

          const back = nextReady(client)
          server = await startRedisServer([], { port: server.port })
          await back
          expect(store.isConnected?.(), 'back').to.equal(true)
          expect(store.readySince?.()).to.be.above(readyAt)
          expect(store.lastError?.()).to.equal(undefined)
        } finally {
          client.destroy()
        }
        expect(store.isConnected?.(), 'closed').to.equal(false)
      })

      it('a write held up by a busy event loop moves readySince to when it went out: the guard counts from then', async () => {
        const client = redis.createClient({ url: server.url })
        client.on('error', () => {})
        await client.connect()
        try {
          const store = redisStore(client)
          const limiter = createRateLimiter({ store, limit: 1_000, window: '1m', logger: quiet })
          expect((await limiter.consume('t')).source).to.equal('store')
          const readyAt = store.readySince?.() as number
          expect((await limiter.consume('t')).source).to.equal('store')
          expect(store.readySince?.(), 'a write that went out at once').to.equal(readyAt)

          // node-redis writes at the end of this turn of the loop (ioredis would have written at once): hold the
          // turn up right after the call is given to the client.
          const send = client.sendCommand.bind(client)
          let heldUntil = 0
          client.sendCommand = ((...args: Parameters<typeof send>) => {
            const reply = send(...args)
            heldUntil = performance.now() + 50
            while (performance.now() < heldUntil) {}
            return reply
          }) as typeof client.sendCommand
          const sentBefore = performance.now()
          expect((await limiter.consume('t')).source).to.equal('store')
          const readySince = store.readySince?.() as number
          expect(readySince, 'when the held-up write went out').to.be.within(heldUntil, performance.now())
          expect(readySince - sentBefore).to.be.at.least(50)
        } finally {
          client.destroy()
        }
      })

      it('a call not written yet when the client starts reconnecting fails at once; later replies stay with their calls', async () => {
        const client = redis.createClient({ url: server.url })
        client.on('error', () => {})
        await client.connect()
        try {
          const adapter = adaptClient(client) as ClientAdapter
          // node-redis writes the commands given in a turn of the event loop at its end. A lost connection seen in
          // between starts a reconnect, as emitted here: node-redis 5.0 would still write the command, into the
          // closed socket, and hand each later reply to the command before its own.
          const unwritten = adapter.evaluate('EVAL', "return 'first'", [], [], false)
          client.emit('reconnecting')
          const error = await unwritten.catch((e: unknown) => e)
          expect(String(error)).to.equal('Error: the connection was lost before node-redis wrote the command')
          expect(isServerFailure(error), 'a lost connection, for the breaker').to.equal(true)
          expect(await adapter.evaluate('EVAL', "return 'second'", [], [], false)).to.equal('second')
          expect(await client.sendCommand(['PING', 'third'])).to.equal('third')
        } finally {
          client.destroy()
        }
      })
    })
  }
})

describe('node-redis calls held up in the client by a busy event loop', () => {
  for (const kind of nodeRedisKinds) {
    it(`up to and past their deadline: each decided by the store, recorded once (${kind.name})`, async () => {
      const server = await startRedisServer()
      const tested = await kind.connect(server.url)
      try {
        const prefix = uniquePrefix()
        const limiter = createRateLimiter({
          store: redisStore(tested.client, { prefix }),
          limit: 1_000,
          window: '1m',
          timeoutMs: 100,
          logger: quiet,
        })
        expect((await limiter.consume('t')).source).to.equal('store')
        const client = tested.client as unknown as { sendCommand(...args: unknown[]): Promise<unknown> }
        const send = client.sendCommand.bind(client)
        for (const holdMs of [90, 97, 120]) {
          // node-redis writes at the end of this turn of the loop: hold the turn up once the calls are given to it.
          let given = 0
          client.sendCommand = (...args: unknown[]) => {
            const reply = send(...args)
            if (++given === 50) {
              const until = performance.now() + holdMs
              while (performance.now() < until) {}
            }
            return reply
          }
          const decisions = await Promise.all(Array.from({ length: 50 }, () => limiter.consume('t')))
          expect(
            decisions.filter((d) => d.source !== 'store'),
            `held ${holdMs} ms`,
          ).to.deep.equal([])
        }
        client.sendCommand = send
        // A call refused by its script (it reached Redis after the deadline it carried) recorded nothing.
        expect(await tested.units(`${prefix}:1000-per-60000ms~sl3-60000:{t}`)).to.equal(151)
        expect(limiter.stats()).to.include({ storeErrors: 0, allowed: 151 })
      } finally {
        tested.close()
        await server.stop()
      }
    })
  }
})

describe('node-redis scripts: one EVAL of a script per server at a time', () => {
  for (const { name, redis } of libraries) {
    it(`a cold burst and a burst after SCRIPT FLUSH each send one EVAL, and every call is decided (${name})`, async function () {
      this.timeout(20_000)
      const server = await startRedisServer()
      const admin = new Redis(server.url)
      const client = redis.createClient({ url: server.url })
      client.on('error', () => {})
      try {
        await client.connect()
        const evals = async () => (await commandCalls(admin))('eval')
        const limiter = createRateLimiter({
          store: redisStore(client),
          limit: 100_000,
          window: '1m',
          local: false,
          timeoutMs: 2_000,
          logger: quiet,
        })
        const burst = async () => {
          const decisions = await Promise.all(Array.from({ length: 300 }, (_, i) => limiter.consume(`t-${i % 7}`)))
          return decisions.filter((d) => d.source !== 'store')
        }
        expect(await burst()).to.deep.equal([])
        expect(await evals(), 'the cold burst').to.equal(1)
        await admin.script('FLUSH')
        expect(await burst()).to.deep.equal([])
        expect(await evals(), 'after SCRIPT FLUSH').to.equal(2)
        expect(limiter.stats()).to.include({ storeErrors: 0, allowed: 600 })
      } finally {
        client.destroy()
        admin.disconnect()
        await server.stop()
      }
    })
  }
})

describe('node-redis replies in either protocol, whatever type mapping the client has', () => {
  const variants = [
    { name: 'node-redis 6, RESP2', make: () => redis6.createClient({ url: redisUrl(), RESP: 2 }) },
    { name: 'node-redis 5, RESP3', make: () => redis5.createClient({ url: redisUrl(), RESP: 3 }) },
    {
      name: 'node-redis 6, strings as Buffers and numbers as strings',
      make: () =>
        redis6.createClient({
          url: redisUrl(),
          commandOptions: {
            typeMapping: { [redis6.RESP_TYPES.BLOB_STRING]: Buffer, [redis6.RESP_TYPES.NUMBER]: String },
          },
        }),
    },
  ]
  for (const variant of variants) {
    it(`sliding log, bucketed, peek and refund decide alike (${variant.name})`, async () => {
      const client = variant.make()
      client.on('error', () => {})
      await client.connect()
      try {
        const store = redisStore(client as never, { prefix: uniquePrefix() })
        for (const algorithm of ['sliding-log', 'bucketed'] as const) {
          const limiter = createRateLimiter({ store, limit: 2, window: '1m', algorithm, local: false, name: algorithm })
          const first = await limiter.consume('t')
          expect(first).to.include({ allowed: true, remaining: 1, source: 'store' })
          expect(await limiter.consume('t')).to.include({ allowed: true, remaining: 0 })
          const denied = await limiter.consume('t')
          expect(denied).to.include({ allowed: false, remaining: 0 })
          // The bucketed algorithm's wait ends at a bucket's edge, which may be past the window's.
          expect(denied.retryAfterMs).to.be.within(59_000, algorithm === 'bucketed' ? 61_000 : 60_000)
          expect(await limiter.refund(first), algorithm).to.deep.equal({ units: 1, outcome: 'refunded' })
          expect((await limiter.peek('t')).remaining).to.equal(1)
        }
      } finally {
        client.destroy()
      }
    })
  }
})
