import { once } from 'node:events'
import { definePolicy, redisStore } from '@fleetlimit/core'
import { type RedisServer, startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { expect } from 'chai'
import type { Redis } from 'ioredis'
import sinon from 'sinon'
import { flavours } from '../support/adapter-harness.js'
import { defaultClient } from '../support/faults.js'

describe('adapters while Redis is down', function () {
  this.timeout(30_000)
  let server: RedisServer
  let client: Redis

  before(async () => {
    server = await startRedisServer()
    client = await defaultClient(server.url)
    // The client must have seen its connection go: until then it would send, as to a live server.
    const closed = once(client, 'close')
    await server.stop()
    await closed
  })
  after(() => client.disconnect())

  for (const flavour of flavours) {
    describe(flavour.name, () => {
      it('failing closed: 503 with Retry-After and problem+json, without handing the client a command', async () => {
        // ioredis queues a command sent while it is disconnected and retries it: a request whose command reached
        // the client could hang on it. Nothing reaching the client is the sign that none did.
        const sent = sinon.spy(client, 'sendCommand')
        const app = await flavour.build({
          shared: { store: redisStore(client), logger: { warn() {} } },
          route: definePolicy({ name: 'users', limit: 5, window: '1m', timeoutMs: 100 }),
        })
        try {
          for (let i = 0; i < 5; i++) {
            const res = await app.request('GET', '/users/1')
            expect(res.status).to.equal(503)
            // The breaker's default cool-down (1 s) bounds the wait until the store is tried again.
            expect(res.headers['retry-after']).to.equal('1')
            expect(res.headers['content-type']).to.equal('application/problem+json')
            expect(JSON.parse(res.body)).to.include({ status: 503, title: 'Service Unavailable' })
            expect(res.headers.ratelimit).to.equal(undefined)
          }
          expect(sent.callCount, 'commands handed to the disconnected client').to.equal(0)
        } finally {
          sent.restore()
          await app.close()
        }
      })

      it('failing open: 200 under the fallback limit, then 429', async () => {
        const app = await flavour.build({
          shared: { store: redisStore(client), logger: { warn() {} } },
          route: definePolicy({
            name: 'users',
            limit: 100,
            window: '1m',
            onStoreError: 'fail-open',
            fallback: { limit: 2 },
          }),
        })
        const statuses = []
        for (let i = 0; i < 4; i++) statuses.push((await app.request('GET', '/users/1')).status)
        expect(statuses).to.deep.equal([200, 200, 429, 429])
        const denied = await app.request('GET', '/users/1')
        expect(denied.headers.ratelimit, 'the fallback window’s own numbers').to.equal('"users";r=0;t=60')
        await app.close()
      })

      it('failing open without a fallback: 200 with no RateLimit headers', async () => {
        const app = await flavour.build({
          shared: { store: redisStore(client), logger: { warn() {} } },
          route: definePolicy({ name: 'users', limit: 1, window: '1m', onStoreError: 'fail-open' }),
        })
        for (let i = 0; i < 3; i++) {
          const res = await app.request('GET', '/users/1')
          expect(res.status).to.equal(200)
          expect(Object.keys(res.headers).filter((h) => h.startsWith('ratelimit'))).to.deep.equal([])
        }
        await app.close()
      })
    })
  }
})
