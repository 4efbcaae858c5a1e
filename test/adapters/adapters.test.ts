import { definePolicy, type Logger, memoryStore, redisStore, type Store } from '@fleetlimit/core'
import { rateLimit as koaRateLimit } from '@fleetlimit/koa'
import { logUnits } from '@fleetlimit/test-kit/log-units'
import { sleep } from '@fleetlimit/test-kit/sleep'
import { expect } from 'chai'
import type { Redis } from 'ioredis'
import Koa from 'koa'
import sinon from 'sinon'
import request from 'supertest'
import { comparable, type Exchange, flavours } from '../support/adapter-harness.js'
import { redisClient, uniquePrefix } from '../support/redis.js'

describe('adapters', () => {
  let redis: Redis
  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())

  const stores: readonly { name: string; make: () => Store }[] = [
    { name: 'memory store', make: () => memoryStore() },
    { name: 'Redis', make: () => redisStore(redis, { prefix: uniquePrefix() }) },
  ]

  for (const flavour of flavours) {
    describe(flavour.name, () => {
      for (const kind of stores) {
        it(`sends headers, then 429 problem+json with Retry-After, then admits after the wait (${kind.name})`, async function () {
          this.timeout(10_000)
          const route = definePolicy({ name: 'users', limit: 2, window: '1s' })
          const app = await flavour.build({ shared: { store: kind.make() }, route })
          const first = await app.request('GET', '/users/1')
          expect(first.status).to.equal(200)
          expect(first.headers['ratelimit-policy']).to.equal('"users";q=2;w=1')
          expect(first.headers.ratelimit).to.equal('"users";r=1;t=1')
          expect((await app.request('GET', '/users/1')).status).to.equal(200)
          const denied = await app.request('GET', '/users/1')
          expect(denied.status).to.equal(429)
          expect(denied.headers['content-type']).to.equal('application/problem+json')
          expect(denied.headers['retry-after']).to.equal('1')
          expect(denied.headers.ratelimit).to.equal('"users";r=0;t=1')
          const problem = JSON.parse(denied.body)
          expect(problem).to.include({
            type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
            status: 429,
            'retry-after': 1,
          })
          expect(problem['violated-policies']).to.deep.equal(['users'])
          await sleep(Number(denied.headers['retry-after']) * 1000)
          expect((await app.request('GET', '/users/1')).status).to.equal(200)
          await app.close()
        })
      }

      it('keys by route pattern: /users/1 and /users/2 share a window, other tenants do not', async () => {
        const app = await flavour.build({
          shared: { store: memoryStore() },
          route: definePolicy({ name: 'users', limit: 1, window: '1m' }),
          tenantFromQuery: true,
        })
        expect((await app.request('GET', '/users/1?t=a')).status).to.equal(200)
        expect((await app.request('GET', '/users/2?t=a')).status).to.equal(429)
        expect((await app.request('GET', '/users/2?t=b')).status).to.equal(200)
        expect((await app.request('GET', '/search?t=a')).status, 'another route').to.equal(200)
      })

      it('groups IPv6 clients by /56 and maps IPv4-mapped IPv6 to IPv4 (trust proxy on)', async () => {
        const app = await flavour.build({
          // Trusting every proxy is warned about (see bypass.test.ts): not in this test's output.
          shared: { store: memoryStore(), logger: { warn: sinon.fake() } },
          route: definePolicy({ name: 'users', limit: 1, window: '1m' }),
          trustProxy: true,
        })
        const from = (ip: string) => app.request('GET', '/users/1', { 'x-forwarded-for': ip })
        expect((await from('2001:db8:1:100::1')).status).to.equal(200)
        expect((await from('2001:db8:1:1ff:ffff::2')).status, 'same /56').to.equal(429)
        expect((await from('2001:db8:1:200::1')).status, 'another /56').to.equal(200)
        expect((await from('10.0.0.1')).status).to.equal(200)
        expect((await from('::ffff:10.0.0.1')).status, 'IPv4-mapped').to.equal(429)
      })

      it('ignores a spoofed X-Forwarded-For unless trust proxy is set, and warns once', async () => {
        const logger: Logger = { warn: sinon.fake() }
        const app = await flavour.build({
          shared: { store: memoryStore(), logger },
          route: definePolicy({ name: 'users', limit: 1, window: '1m' }),
        })
        expect((await app.request('GET', '/users/1', { 'x-forwarded-for': '1.1.1.1' })).status).to.equal(200)
        expect((await app.request('GET', '/users/1', { 'x-forwarded-for': '2.2.2.2' })).status).to.equal(429)
        expect((await app.request('GET', '/users/1', { 'x-forwarded-for': '3.3.3.3' })).status).to.equal(429)
        expect((logger.warn as sinon.SinonSpy).callCount).to.equal(1)
        expect((logger.warn as sinon.SinonSpy).firstCall.args[0]).to.match(/X-Forwarded-For/)
      })

      it('survives hostile tenants: huge, braces, colons, newlines, unicode, each its own window', async () => {
        const store = memoryStore()
        const app = await flavour.build({
          shared: { store },
          route: definePolicy({ name: 'users', limit: 1, window: '1m' }),
          tenantFromQuery: true,
        })
        const tenants = ['x'.repeat(10_000), '{a}', 'a:b', '}{', 'a\nb', 'a\r\nb', '🦀', 'é', '%', '']
        for (const tenant of tenants) {
          const res = await app.request('GET', `/users/1?t=${encodeURIComponent(tenant)}`)
          expect(res.status, JSON.stringify(tenant.slice(0, 12))).to.equal(200)
        }
        for (const tenant of tenants) {
          expect((await app.request('GET', `/users/1?t=${encodeURIComponent(tenant)}`)).status).to.equal(429)
        }
      })

      it('several policies: denied by the route policy is not counted in the global one', async () => {
        const prefix = uniquePrefix()
        const global = definePolicy({ name: 'global', limit: 3, window: '1m', scope: 'tenant' })
        const search = definePolicy({ name: 'search', limit: 2, window: '30s' })
        const app = await flavour.build({
          shared: { store: redisStore(redis, { prefix }) },
          route: [global, search],
          tenantFromQuery: true,
        })
        expect((await app.request('GET', '/search?t=t1')).status).to.equal(200)
        const second = await app.request('GET', '/search?t=t1')
        expect(second.headers['ratelimit-policy']).to.equal('"global";q=3;w=60, "search";q=2;w=30')
        expect(second.headers.ratelimit).to.equal('"global";r=1;t=60, "search";r=0;t=30')
        const denied = await app.request('GET', '/search?t=t1')
        expect(denied.status).to.equal(429)
        expect(JSON.parse(denied.body)['violated-policies']).to.deep.equal(['search'])
        expect(
          await logUnits(redis, `${prefix}:global~sl3-60000:{t1}`),
          'the denial was not counted globally',
        ).to.equal(2)
        expect((await app.request('GET', '/users/1?t=t1')).status, 'the global window has one left').to.equal(200)
        const globalDenied = await app.request('GET', '/users/2?t=t1')
        expect(globalDenied.status).to.equal(429)
        expect(Number(globalDenied.headers['retry-after'])).to.be.within(59, 60)
      })

      it('answers with the longest wait when two policies deny', async () => {
        const app = await flavour.build({
          shared: { store: memoryStore() },
          route: [
            definePolicy({ name: 'burst', limit: 1, window: '2s' }),
            definePolicy({ name: 'hourly', limit: 1, window: '1h' }),
          ],
        })
        await app.request('GET', '/search')
        const denied = await app.request('GET', '/search')
        expect(denied.headers['retry-after']).to.equal('3600')
        expect(JSON.parse(denied.body)['violated-policies']).to.deep.equal(['burst', 'hourly'])
      })

      it('counts a HEAD served by the GET route once, in the GET route’s window', async () => {
        const app = await flavour.build({
          shared: { store: memoryStore() },
          route: definePolicy({ name: 'users', limit: 2, window: '1m' }),
        })
        expect((await app.request('HEAD', '/users/1')).status).to.equal(200)
        expect((await app.request('GET', '/users/1')).status).to.equal(200)
        expect((await app.request('GET', '/users/1')).status).to.equal(429)
      })

      it('counts a request through a router under a prefix once', async () => {
        const store = memoryStore()
        const app = await flavour.build({
          shared: { store },
          app: definePolicy({ name: 'app', limit: 2, window: '1m' }),
          sameMiddlewareTwice: true,
        })
        expect((await app.request('GET', '/api/items/1')).status).to.equal(200)
        const second = await app.request('GET', '/api/items/2')
        expect(second.status).to.equal(200)
        expect(second.headers.ratelimit).to.equal('"app";r=0;t=60')
        expect(store.size, 'one window, counted once per request').to.equal(1)
      })

      it('skip, cost, onLimited, statusCode and message are honoured', async () => {
        const onLimited = sinon.fake()
        const app = await flavour.build({
          shared: {
            store: memoryStore(),
            skip: (req: unknown) => JSON.stringify((req as { url?: string }).url ?? '').includes('skip'),
            cost: () => 2,
            onLimited,
            statusCode: 503,
            message: { error: 'slow down' },
          },
          route: definePolicy({ name: 'users', limit: 3, window: '1m' }),
        })
        for (let i = 0; i < 5; i++) expect((await app.request('GET', '/users/1?skip=1')).status).to.equal(200)
        const first = await app.request('GET', '/users/1')
        expect(first.headers.ratelimit).to.equal('"users";r=1;t=60')
        const denied = await app.request('GET', '/users/1')
        expect(denied.status).to.equal(503)
        expect(denied.headers['content-type']).to.equal('application/json; charset=utf-8')
        expect(JSON.parse(denied.body)).to.deep.equal({ error: 'slow down' })
        expect(onLimited.callCount).to.equal(1)
        expect(onLimited.firstCall.args[1]).to.include({ allowed: false, policy: 'users' })
      })

      it('sends draft-6, draft-7, legacy or no headers as configured', async () => {
        const route = definePolicy({ name: 'users', limit: 5, window: '1m' })
        const send = async (shared: object) => {
          const app = await flavour.build({ shared: { store: memoryStore(), ...shared }, route })
          return (await app.request('GET', '/users/1')).headers
        }
        const six = await send({ headers: 'draft-6' })
        expect(six).to.include({
          'ratelimit-limit': '5',
          'ratelimit-remaining': '4',
          'ratelimit-reset': '60',
          'ratelimit-policy': '5;w=60',
        })
        const seven = await send({ headers: 'draft-7', legacyHeaders: true })
        expect(seven).to.include({ ratelimit: 'limit=5, remaining=4, reset=60', 'ratelimit-policy': '5;w=60' })
        expect(seven).to.include({ 'x-ratelimit-limit': '5', 'x-ratelimit-remaining': '4' })
        expect(Number(seven['x-ratelimit-reset'])).to.be.closeTo(Date.now() / 1000 + 60, 2)
        const none = await send({ headers: false })
        expect(Object.keys(none).filter((name) => name.includes('ratelimit'))).to.deep.equal([])
      })
    })
  }

  it('answers byte for byte alike on every framework', async () => {
    const transcripts: Exchange[][] = []
    for (const flavour of flavours) {
      const app = await flavour.build({
        shared: { store: memoryStore() },
        route: definePolicy({ name: 'search', limit: 2, window: '1m' }),
      })
      const transcript: Exchange[] = []
      for (let i = 0; i < 3; i++) transcript.push(comparable(await app.request('GET', '/search')))
      transcripts.push(transcript)
      await app.close()
    }
    const [reference, ...others] = transcripts
    expect(reference?.map((e) => e.status)).to.deep.equal([200, 200, 429])
    for (const [i, transcript] of others.entries()) {
      expect(transcript, (flavours[i + 1] as { name: string }).name).to.deep.equal(reference)
    }
  })

  it('Fastify: config.rateLimit false turns a route off; the plugin alone limits across routes', async () => {
    const fastify = flavours.find((f) => f.name.startsWith('fastify')) as (typeof flavours)[number]
    const off = await fastify.build({
      shared: { store: memoryStore() },
      app: definePolicy({ limit: 1, window: '1m' }),
      route: false,
    })
    for (let i = 0; i < 3; i++) expect((await off.request('GET', '/users/1')).status).to.equal(200)
    const global = await fastify.build({
      shared: { store: memoryStore() },
      app: definePolicy({ limit: 1, window: '1m' }),
    })
    expect((await global.request('GET', '/users/1')).status).to.equal(200)
    expect((await global.request('GET', '/search')).status).to.equal(429)
  })

  it('Fastify: a route’s own policy takes none of the plugin’s policy options (algorithm, cost, …)', async () => {
    const fastify = flavours.find((f) => f.name.startsWith('fastify')) as (typeof flavours)[number]
    const app = await fastify.build({
      shared: { store: memoryStore(), limit: 1, window: '1m', algorithm: 'bucketed', buckets: 10, cost: 1 } as never,
      route: definePolicy({ name: 'users', limit: 2, window: '1m' }),
    })
    const first = await app.request('GET', '/users/1')
    expect(first.status).to.equal(200)
    expect(first.headers['ratelimit-policy']).to.equal('"users";q=2;w=60')
  })

  it('Koa without a router: app.use() limits across all paths in one bucket', async () => {
    const app = new Koa()
    app.use(koaRateLimit({ store: memoryStore(), limit: 1, window: '1m' }))
    app.use((ctx) => {
      ctx.body = 'ok'
    })
    expect((await request(app.callback()).get('/a')).status).to.equal(200)
    const denied = await request(app.callback()).get('/b')
    expect(denied.status).to.equal(429)
    expect(denied.headers['retry-after']).to.equal('60')
  })
})
