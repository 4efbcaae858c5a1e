import { type Decision, definePolicy, memoryStore, redisStore } from '@fleetlimit/core'
import { rateLimit as expressRateLimit } from '@fleetlimit/express'
import { rateLimit as fastifyRateLimit } from '@fleetlimit/fastify'
import { rateLimit as koaRateLimit } from '@fleetlimit/koa'
import { expect } from 'chai'
import express from 'express'
import Fastify from 'fastify'
import type { Redis } from 'ioredis'
import Koa from 'koa'
import request from 'supertest'
import { type Exchange, flavours } from '../support/adapter-harness.js'
import { redisClient, uniquePrefix } from '../support/redis.js'

/** The decision a handler answered with (see `echoDecision` in the harness). */
const seen = (exchange: Exchange): Decision | null =>
  (JSON.parse(exchange.body) as { rateLimit: Decision | null }).rateLimit

describe('adapters: the decision where handlers can read it', () => {
  let redis: Redis
  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())

  for (const flavour of flavours) {
    describe(flavour.name, () => {
      it('hands the handler the decision on an admitted request: limit, remaining, policy', async () => {
        const app = await flavour.build({
          shared: { store: redisStore(redis, { prefix: uniquePrefix() }) },
          route: definePolicy({ name: 'users', limit: 3, window: '1m' }),
          echoDecision: true,
        })
        const first = await app.request('GET', '/users/1')
        expect(first.status).to.equal(200)
        expect(seen(first)).to.include({ allowed: true, limit: 3, remaining: 2, policy: 'users', source: 'store' })
        const second = seen(await app.request('GET', '/users/1'))
        expect(second).to.include({ allowed: true, limit: 3, remaining: 1, policy: 'users' })
        expect(second?.policies, 'one policy: no list').to.equal(undefined)
        await app.close()
      })

      it('with several policies, rateLimit.policies holds each one’s decision', async () => {
        const app = await flavour.build({
          shared: { store: redisStore(redis, { prefix: uniquePrefix() }) },
          route: [
            definePolicy({ name: 'global', limit: 5, window: '1m', scope: 'tenant' }),
            definePolicy({ name: 'search', limit: 2, window: '30s' }),
          ],
          echoDecision: true,
        })
        const decision = seen(await app.request('GET', '/search'))
        // The policy that binds (least remaining) leads.
        expect(decision).to.include({ allowed: true, limit: 2, remaining: 1, policy: 'search' })
        const policies = decision?.policies?.map(({ policy, limit, remaining, allowed }) => ({
          policy,
          limit,
          remaining,
          allowed,
        }))
        expect(policies).to.deep.equal([
          { policy: 'global', limit: 5, remaining: 4, allowed: true },
          { policy: 'search', limit: 2, remaining: 1, allowed: true },
        ])
        await app.close()
      })

      it('with an app-wide and a per-route limiter, the handler sees the last one’s decision', async () => {
        const app = await flavour.build({
          shared: { store: memoryStore() },
          app: definePolicy({ name: 'app', limit: 10, window: '1m' }),
          route: definePolicy({ name: 'users', limit: 4, window: '1m' }),
          echoDecision: true,
        })
        expect(seen(await app.request('GET', '/users/1'))).to.include({ policy: 'users', limit: 4, remaining: 3 })
        await app.close()
      })

      it('sets nothing on a skipped request: no decision was made', async () => {
        const app = await flavour.build({
          shared: { store: memoryStore(), skip: () => true },
          route: definePolicy({ name: 'users', limit: 1, window: '1m' }),
          echoDecision: true,
        })
        const res = await app.request('GET', '/users/1')
        expect(res.status).to.equal(200)
        expect(seen(res)).to.equal(null)
        expect((await app.request('GET', '/users/1')).status, 'skipped, so never denied').to.equal(200)
        await app.close()
      })
    })
  }

  // A denial is answered by the limiter itself: what runs around it (a logger, an onSend hook) still reads it.
  describe('on a denied request, code around the limiter reads the denial', () => {
    const policy = definePolicy({ name: 'users', limit: 1, window: '1m' })

    it('Express: req.rateLimit once the 429 is sent', async () => {
      const app = express()
      const finished: Promise<Decision | undefined>[] = []
      app.use((req, res, next) => {
        finished.push(new Promise((resolve) => res.on('finish', () => resolve(req.rateLimit))))
        next()
      })
      app.get('/users/:id', expressRateLimit({ store: memoryStore(), policy }), (_req, res) => {
        res.send('ok')
      })
      expect((await request(app).get('/users/1')).status).to.equal(200)
      expect((await request(app).get('/users/1')).status).to.equal(429)
      const [admitted, denied] = await Promise.all(finished)
      expect(admitted).to.include({ allowed: true, remaining: 0, policy: 'users' })
      expect(denied).to.include({ allowed: false, remaining: 0, policy: 'users' })
      // Until the admitted request's unit leaves the 1 min window: the window less the few ms between the requests.
      expect(denied?.retryAfterMs).to.be.within(59_000, 60_000)
    })

    it('Koa: ctx.state.rateLimit in a middleware before the limiter, after next()', async () => {
      const app = new Koa()
      const after: (Decision | undefined)[] = []
      app.use(async (ctx, next) => {
        await next()
        after.push(ctx.state.rateLimit)
      })
      app.use(koaRateLimit({ store: memoryStore(), policy }))
      app.use((ctx) => {
        ctx.body = 'ok'
      })
      expect((await request(app.callback()).get('/')).status).to.equal(200)
      expect((await request(app.callback()).get('/')).status).to.equal(429)
      expect(after).to.have.length(2)
      expect(after[0]).to.include({ allowed: true, remaining: 0, policy: 'users' })
      expect(after[1]).to.include({ allowed: false, remaining: 0, policy: 'users' })
    })

    it('Fastify: request.rateLimit in an onSend hook', async () => {
      const app = Fastify()
      const sent: (Decision | undefined)[] = []
      app.addHook('onSend', async (req) => {
        sent.push(req.rateLimit)
      })
      await app.register(fastifyRateLimit, { store: memoryStore(), policy })
      app.get('/users/:id', async () => 'ok')
      expect((await app.inject({ url: '/users/1' })).statusCode).to.equal(200)
      expect((await app.inject({ url: '/users/1' })).statusCode).to.equal(429)
      expect(sent).to.have.length(2)
      expect(sent[0]).to.include({ allowed: true, remaining: 0, policy: 'users' })
      expect(sent[1]).to.include({ allowed: false, remaining: 0, policy: 'users' })
      await app.close()
    })
  })
})
