import { definePolicy, type Logger, memoryStore } from '@fleetlimit/core'
import { rateLimit as expressRateLimit } from '@fleetlimit/express'
import { rateLimit as fastifyRateLimit } from '@fleetlimit/fastify'
import { rateLimit as koaRateLimit } from '@fleetlimit/koa'
import { expect } from 'chai'
import express5 from 'express'
import express4 from 'express4'
import Fastify from 'fastify'
import Koa from 'koa'
import sinon from 'sinon'
import request from 'supertest'
import { everyVersion, METHODS } from '../support/adapter-harness.js'

/** The messages a fake logger was given. */
const messages = (logger: Logger) => (logger.warn as sinon.SinonSpy).getCalls().map((call) => String(call.args[0]))
const quiet = (): Logger => ({ warn: sinon.fake() })

describe('adapters: requests cannot bypass a per-route limit', () => {
  for (const flavour of everyVersion) {
    describe(flavour.name, () => {
      it('keys a route of every method once: 3 requests of each method, 2 admitted in all', async () => {
        const store = memoryStore()
        const app = await flavour.build({
          shared: { store },
          route: definePolicy({ name: 'op', limit: 2, window: '1m' }),
        })
        const admitted: string[] = []
        for (let round = 0; round < 3; round++) {
          for (const method of METHODS) {
            const res = await app.request(method, '/api/op')
            expect(res.status, method).to.be.oneOf([200, 429])
            if (res.status === 200) admitted.push(method)
          }
        }
        expect(admitted).to.deep.equal(['GET', 'HEAD'])
        expect(store.size, 'one window for the one route').to.equal(1)
        await app.close()
      })

      it('keys a route of GET and POST once, HEAD included: 3 of each, 2 admitted in all', async () => {
        const store = memoryStore()
        const app = await flavour.build({
          shared: { store },
          route: definePolicy({ name: 'multi', limit: 2, window: '1m' }),
        })
        const admitted: string[] = []
        for (let round = 0; round < 3; round++) {
          for (const method of ['HEAD', 'POST', 'GET'] as const) {
            const res = await app.request(method, '/api/multi')
            expect(res.status, method).to.be.oneOf([200, 429])
            if (res.status === 200) admitted.push(method)
          }
        }
        expect(admitted).to.deep.equal(['HEAD', 'POST'])
        expect(store.size, 'one window for the one route').to.equal(1)
        await app.close()
      })

      it("counts HEAD in its GET route's window", async () => {
        const store = memoryStore()
        const app = await flavour.build({
          shared: { store },
          route: definePolicy({ name: 'users', limit: 3, window: '1m' }),
        })
        const statuses: number[] = []
        for (const method of ['HEAD', 'GET', 'HEAD', 'GET'] as const)
          statuses.push((await app.request(method, '/users/1')).status)
        expect(statuses).to.deep.equal([200, 200, 200, 429])
        expect(store.size).to.equal(1)
        await app.close()
      })

      it('keys a GET route by its own pattern, not by a route of another method that the path also matches', async () => {
        const store = memoryStore()
        const app = await flavour.build({
          shared: { store },
          route: definePolicy({ name: 'files', limit: 2, window: '1m' }),
        })
        const statuses = async (method: 'GET' | 'POST' | 'DELETE', paths: readonly string[]) => {
          const got: number[] = []
          for (const path of paths) got.push((await app.request(method, path)).status)
          return got
        }
        expect(await statuses('GET', ['/files/a', '/files/b', '/files/c'])).to.deep.equal([200, 200, 429])
        // GET /files/:name serves these too: its window, whatever POST /files/upload and DELETE /files/archive are.
        expect(
          await statuses('GET', ['/files/upload', '/files/upload', '/files/archive', '/files/archive']),
        ).to.deep.equal([429, 429, 429, 429])
        expect(await statuses('POST', ['/files/upload', '/files/upload', '/files/upload'])).to.deep.equal([
          200, 200, 429,
        ])
        expect(await statuses('DELETE', ['/files/archive'])).to.deep.equal([200])
        expect(store.size, 'one window per route').to.equal(3)
        await app.close()
      })

      it('keys a route under a parameterised mount by its pattern: /users/<n>/posts share one window', async () => {
        const store = memoryStore()
        const app = await flavour.build({
          shared: { store },
          route: definePolicy({ name: 'posts', limit: 5, window: '1m' }),
        })
        const statuses: number[] = []
        for (let n = 0; n < 50; n++) statuses.push((await app.request('GET', `/users/${n}/posts`)).status)
        expect(statuses.filter((s) => s === 200)).to.have.length(5)
        expect(statuses.filter((s) => s === 429)).to.have.length(45)
        expect(store.size, 'one window for the one route').to.equal(1)
        await app.close()
      })

      it('letter case makes no new route: /api, /API, /Api count in one window', async () => {
        const store = memoryStore()
        const app = await flavour.build({
          shared: { store },
          route: definePolicy({ name: 'items', limit: 5, window: '1m' }),
        })
        const statuses: number[] = []
        for (let i = 0; i < 12; i++) {
          for (const prefix of ['/api', '/API', '/Api', '/aPi']) {
            statuses.push((await app.request('GET', `${prefix}/items/${i}`)).status)
          }
        }
        // Fastify routes case-sensitively: /API is a 404 there, which the route's limit does not count.
        expect(statuses.filter((s) => s === 200)).to.have.length(5)
        expect(statuses.filter((s) => s !== 200 && s !== 429 && s !== 404)).to.deep.equal([])
        expect(store.size).to.equal(1)
        await app.close()
      })

      it('counts a client address with a port as the address: varying the port does not help', async () => {
        const logger = quiet()
        const app = await flavour.build({
          shared: { store: memoryStore(), logger },
          route: definePolicy({ name: 'users', limit: 5, window: '1m' }),
          trustProxy: true,
        })
        const served = async (address: (port: number) => string) => {
          let admitted = 0
          for (let port = 1000; port < 1020; port++) {
            const res = await app.request('GET', '/users/1', { 'x-forwarded-for': address(port) })
            if (res.status === 200) admitted++
          }
          return admitted
        }
        expect(await served((port) => `1.2.3.4:${port}`)).to.equal(5)
        expect(await served((port) => `[2001:db8::1]:${port}`)).to.equal(5)
        expect(await served((port) => `[::ffff:1.2.3.4]:${port}`), 'the same client as 1.2.3.4').to.equal(0)
        expect(messages(logger).filter((m) => m.includes('not an IP address'))).to.deep.equal([])
        await app.close()
      })

      it('warns once, quoted, about a client address that is not an IP address', async () => {
        const logger = quiet()
        const app = await flavour.build({
          shared: { store: memoryStore(), logger },
          route: definePolicy({ name: 'users', limit: 5, window: '1m' }),
          trustProxy: true,
        })
        for (const value of ['not-an-ip', 'unknown', 'x'.repeat(5_000)]) {
          expect((await app.request('GET', '/users/1', { 'x-forwarded-for': value })).status).to.equal(200)
        }
        const warnings = messages(logger).filter((m) => m.includes('not an IP address'))
        expect(warnings).to.have.length(1)
        expect(warnings[0]).to.include('"not-an-ip"')
      })

      it('warns once that trusting every proxy lets clients spoof X-Forwarded-For', async () => {
        const logger = quiet()
        const app = await flavour.build({
          shared: { store: memoryStore(), logger },
          route: definePolicy({ name: 'users', limit: 5, window: '1m' }),
          trustProxy: true,
        })
        for (let i = 0; i < 3; i++) await app.request('GET', '/users/1', { 'x-forwarded-for': `10.0.0.${i}` })
        const warnings = messages(logger).filter((m) => m.includes('from any peer'))
        expect(warnings).to.have.length(1)
        expect(warnings[0]).to.match(/spoof X-Forwarded-For/)
        expect(warnings[0]).to.match(/trust proxy|maxIpsCount|trustProxy/)
        await app.close()
      })

      it('gives no proxy warning to a direct client when no proxy is trusted', async () => {
        const logger = quiet()
        const app = await flavour.build({
          shared: { store: memoryStore(), logger },
          route: definePolicy({ name: 'users', limit: 5, window: '1m' }),
        })
        for (let i = 0; i < 3; i++) await app.request('GET', '/users/1')
        expect(messages(logger)).to.deep.equal([])
        await app.close()
      })
    })
  }
})

describe('adapters: trusting some proxies', () => {
  const policy = definePolicy({ name: 'users', limit: 1, window: '1m' })

  it('Fastify: warns once that trustProxy: 1 (ignored by Fastify 5) makes the proxy the client', async () => {
    const logger = quiet()
    // The types of Fastify 5.12 no longer take a number, but JavaScript users still write it.
    const app = Fastify({ trustProxy: 1 as never })
    await app.register(fastifyRateLimit, { store: memoryStore(), logger, policy })
    app.get('/', async () => 'ok')
    const statuses: number[] = []
    for (const client of ['203.0.113.1', '203.0.113.2', '203.0.113.3']) {
      statuses.push((await app.inject({ url: '/', headers: { 'x-forwarded-for': client } })).statusCode)
    }
    // The reason for the warning: every client behind the proxy shares the proxy's limit.
    expect(statuses).to.deep.equal([200, 429, 429])
    const warnings = messages(logger)
    expect(warnings).to.have.length(1)
    expect(warnings[0]).to.match(/does not trust as a proxy/)
    expect(warnings[0]).to.match(/trustProxy/)
    await app.close()
  })

  it('Fastify: no warning, and one limit per client, when trustProxy lists the proxy', async () => {
    const logger = quiet()
    const app = Fastify({ trustProxy: '127.0.0.1' })
    await app.register(fastifyRateLimit, { store: memoryStore(), logger, policy })
    app.get('/', async () => 'ok')
    const statuses: number[] = []
    for (const client of ['203.0.113.1', '203.0.113.2', '203.0.113.1']) {
      statuses.push((await app.inject({ url: '/', headers: { 'x-forwarded-for': client } })).statusCode)
    }
    expect(statuses).to.deep.equal([200, 200, 429])
    expect(messages(logger)).to.deep.equal([])
    await app.close()
  })

  for (const [name, express] of [
    ['express 5', express5],
    ['express 4', express4 as typeof express5],
  ] as const) {
    it(`${name}: warns once when 'trust proxy' does not list the peer that sends X-Forwarded-For`, async () => {
      const logger = quiet()
      const app = express()
      app.set('trust proxy', '10.0.0.1')
      app.get('/', expressRateLimit({ store: memoryStore(), logger, policy }), (_req, res) => {
        res.end('ok')
      })
      for (let i = 0; i < 3; i++) await request(app).get('/').set('x-forwarded-for', `203.0.113.${i}`)
      const warnings = messages(logger)
      expect(warnings).to.have.length(1)
      expect(warnings[0]).to.match(/does not trust as a proxy/)
    })

    it(`${name}: a hop count is no trust-every-proxy set-up`, async () => {
      const logger = quiet()
      const app = express()
      app.set('trust proxy', 1)
      app.get('/', expressRateLimit({ store: memoryStore(), logger, policy }), (_req, res) => {
        res.end('ok')
      })
      const first = await request(app).get('/').set('x-forwarded-for', '203.0.113.1')
      const second = await request(app).get('/').set('x-forwarded-for', '203.0.113.2')
      expect([first.status, second.status]).to.deep.equal([200, 200])
      expect(messages(logger)).to.deep.equal([])
    })
  }

  it('Koa: app.proxy with maxIpsCount is no trust-every-proxy set-up', async () => {
    const logger = quiet()
    const app = new Koa()
    app.proxy = true
    app.maxIpsCount = 1
    app.use(koaRateLimit({ store: memoryStore(), logger, policy }))
    app.use((ctx) => {
      ctx.body = 'ok'
    })
    const first = await request(app.callback()).get('/').set('x-forwarded-for', '203.0.113.1')
    const second = await request(app.callback()).get('/').set('x-forwarded-for', '203.0.113.2')
    expect([first.status, second.status]).to.deep.equal([200, 200])
    expect(messages(logger)).to.deep.equal([])
  })
})
