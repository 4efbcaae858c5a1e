import { fork } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { createRateLimiter, memoryStore, type RateLimiter, redisStore, type Store } from '@fleetlimit/core'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { sleep } from '@fleetlimit/test-kit/sleep'
import { expect } from 'chai'
import type { Redis } from 'ioredis'
import { childMessages } from '../support/child-messages.js'
import { clientKinds, redisClient, type TestClient, uniquePrefix } from '../support/redis.js'
import { redisUrl } from '../support/root-hooks.js'

type Keys = readonly string[] | undefined

/** The key changes a store announces to this process, as its local tiers get them (after them: added later). */
function watchChanges(store: Store) {
  const seen: Keys[] = []
  let wake: (() => void) | undefined
  const listener = (keys: Keys) => {
    seen.push(keys)
    wake?.()
  }
  // Held weakly by the store: this object keeps it alive.
  store.onKeyChange?.(listener)
  return {
    seen,
    listener,
    /** Resolves once the next change is announced. */
    next: () => new Promise<void>((resolve) => (wake = resolve)),
  }
}

/** Denies `key` on `limiter` until its cache answers: limit 2, so the third call is the store's denial. */
async function deniedAndCached(limiter: RateLimiter, key: string) {
  await limiter.consume(key)
  await limiter.consume(key)
  expect(await limiter.consume(key)).to.include({ allowed: false, source: 'store' })
  expect(await limiter.consume(key)).to.include({ allowed: false, source: 'local' })
}

const policy = { limit: 2, window: '1m', logger: { warn() {}, info() {} } } as const

describe('a reset or pause in one limiter reaches every local tier on the store', function () {
  this.timeout(30_000)

  describe('memory store: two limiters on one store', () => {
    it('a reset through one drops the other’s cached denial', async () => {
      const store = memoryStore()
      const [a, b] = [createRateLimiter({ store, ...policy }), createRateLimiter({ store, ...policy })]
      await deniedAndCached(b, 'k')
      await a.reset('k')
      expect(await b.consume('k')).to.include({ allowed: true, source: 'store' })
    })

    it('a reset of one policy’s key drops exactly the cached denials that name it, every policy of them with it', async () => {
      const store = memoryStore()
      const global = { name: 'global', limit: 2, window: '1m', scope: 'tenant' } as const
      const search = { name: 'search', limit: 2, window: '1m' } as const
      const both = createRateLimiter({ store, policies: [global, search], logger: policy.logger })
      const globalOnly = createRateLimiter({ store, ...global, logger: policy.logger })
      const t1Search = { tenant: 't1', route: 'GET /search' }
      const t1Other = { tenant: 't1', route: 'GET /other' }
      const t2Search = { tenant: 't2', route: 'GET /search' }
      // Two searches each fill both policies: three compound denials get cached.
      for (const key of [t1Search, t1Search, t2Search, t2Search]) await both.consume(key)
      for (const key of [t1Search, t1Other, t2Search]) {
        expect(await both.consume(key)).to.include({ allowed: false, source: 'store' })
        expect(await both.consume(key)).to.include({ allowed: false, source: 'local' })
      }

      await globalOnly.reset('t1')
      // Both of t1's denials named its global key: they go, with their search key's figures. t2's stays.
      expect(await both.consume(t1Search)).to.include({ allowed: false, source: 'store', policy: 'search' })
      expect(await both.consume(t1Other)).to.include({ allowed: true, source: 'store' })
      expect(await both.consume(t2Search)).to.include({ allowed: false, source: 'local' })
    })

    it('a pause through one ends the other’s lease', async () => {
      const store = memoryStore()
      const options = { store, limit: 100, window: '1m', local: { lease: 10 } } as const
      const [a, b] = [createRateLimiter(options), createRateLimiter(options)]
      expect(await b.consume('k')).to.include({ allowed: true, source: 'store' })
      expect(await b.consume('k')).to.include({ allowed: true, source: 'local' })
      await a.pause('k', '1m')
      expect(await b.consume('k')).to.include({ allowed: false, source: 'store' })
    })
  })

  it('a real second process: reset(key) here unblocks its cached denial', async () => {
    const prefix = uniquePrefix()
    const child = fork(fileURLToPath(new URL('../support/reset-child.ts', import.meta.url)), {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    const client = redisClient()
    try {
      const { next } = childMessages(child)
      child.send({ redisUrl: redisUrl(), prefix })
      expect(await next()).to.deep.equal({ type: 'denied', sources: ['store', 'store', 'store', 'local'] })
      const here = createRateLimiter({ store: redisStore(client, { prefix }), ...policy })
      await here.reset('k')
      expect(await next()).to.deep.equal({ type: 'after', allowed: true, source: 'store' })
      await once(child, 'exit')
    } finally {
      child.kill()
      client.disconnect()
    }
  })

  for (const kind of clientKinds) {
    describe(`Redis: two processes, each its own client and store (${kind.name})`, () => {
      let admin: Redis
      let clients: TestClient[]
      let prefix: string
      beforeEach(async () => {
        admin = redisClient()
        clients = [await kind.connect(redisUrl()), await kind.connect(redisUrl())]
        prefix = uniquePrefix()
      })
      afterEach(async () => {
        for (const client of clients) await client.close()
        admin.disconnect()
      })

      /** Limiter `b`'s store is watched; resolves once its subscriber connection listens. */
      async function twoProcesses(options: object = {}) {
        const [storeA, storeB] = clients.map((c) => redisStore(c.client, { prefix })) as [Store, Store]
        const a = createRateLimiter({ store: storeA, ...policy, ...options })
        const b = createRateLimiter({ store: storeB, ...policy, ...options })
        const changes = watchChanges(storeB)
        // The subscriber connects and subscribes on its own: wait for the server to count it.
        for (let tries = 0; ; tries++) {
          const [, count] = (await admin.call('PUBSUB', 'NUMSUB', `${prefix}:changed`)) as [string, number]
          if (count > 0) break
          if (tries > 500) throw new Error('the subscriber never subscribed')
          await sleep(5)
        }
        return { a, b, changes }
      }

      it('reset(key) in one unblocks the other at once: its cached denial goes on the message', async () => {
        const { a, b, changes } = await twoProcesses()
        await deniedAndCached(b, 'k')
        const changed = changes.next()
        await a.reset('k')
        await changed
        expect(changes.seen).to.deep.equal([[keyOf(b, 'k')]])
        expect(await b.consume('k')).to.include({ allowed: true, source: 'store' })
      })

      it('pause(key) in one ends the other’s lease on the key', async () => {
        const { a, b, changes } = await twoProcesses({ limit: 100, local: { lease: 10 } })
        expect(await b.consume('k')).to.include({ allowed: true, source: 'store' })
        expect(await b.consume('k')).to.include({ allowed: true, source: 'local' })
        const changed = changes.next()
        await a.pause('k', '1m')
        await changed
        expect(await b.consume('k')).to.include({ allowed: false, source: 'store' })
      })

      it('a restarted Redis (messages may have been missed): every cached denial goes once the subscriber is back', async () => {
        const server = await startRedisServer()
        const tested = await kind.connect(server.url)
        let restarted = server
        try {
          const store = redisStore(tested.client, { prefix })
          const limiter = createRateLimiter({ store, ...policy })
          const changes = watchChanges(store)
          // The subscriber finds out what connection it listens on as it starts: a restart before then looks to
          // it like its first connection. Freed slots share that subscriber and say when it is confirmed.
          let onConfirmed = () => {}
          const confirmed = new Promise<void>((resolve) => (onConfirmed = resolve))
          // Held weakly by the store: used again below, so kept alive until the test ends.
          const slotListener = () => onConfirmed()
          store.onSlotFree?.(slotListener)
          await confirmed
          await deniedAndCached(limiter, 'k')
          await server.stop()
          const missed = changes.next()
          const ready = tested.nextReady()
          restarted = await startRedisServer([], { port: server.port })
          await Promise.all([missed, ready])
          expect(changes.seen).to.deep.equal([undefined])
          expect(await limiter.consume('k')).to.include({ allowed: true, source: 'store' })
          onConfirmed = slotListener
        } finally {
          await tested.close()
          await restarted.stop()
        }
      })

      it('after a FLUSHALL, an operator’s PUBLISH of "*" on the channel drops every cached denial', async () => {
        const { b, changes } = await twoProcesses()
        await deniedAndCached(b, 'k')
        // The key goes behind fleetlimit's back, as in a FLUSHALL (the test server is shared: not flushed).
        await admin.del(keyOf(b, 'k', prefix))
        const changed = changes.next()
        await admin.publish(`${prefix}:changed`, '*')
        await changed
        expect(changes.seen).to.deep.equal([undefined])
        expect(await b.consume('k')).to.include({ allowed: true, source: 'store' })
      })
    })
  }
})

/** The store key of a one-policy limiter's key: its policy's key name and the tenant as its hash tag. */
function keyOf(limiter: RateLimiter, tenant: string, prefix?: string): string {
  const key = `${limiter.policy.name}~sl3-${limiter.policy.window}:{${tenant}}`
  return prefix === undefined ? key : `${prefix}:${key}`
}
