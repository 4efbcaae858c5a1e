import { definePolicy, isFleetlimitError, memoryStore, redisStore } from '@fleetlimit/core'
import { type FastifyRateLimitOptions, type RateLimitHook, rateLimit } from '@fleetlimit/fastify'
import { expect } from 'chai'
import Fastify, { type FastifyInstance } from 'fastify'
import type { Redis } from 'ioredis'
import { redisClient, uniquePrefix } from '../support/redis.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the test's auth hook. */
    user?: string
  }
}

const perUser = definePolicy({ name: 'per-user', limit: 1, window: '1m' })

/** An app whose auth hook (in `authIn`, added before the plugin) sets request.user from the x-user header. */
async function authedApp(authIn: 'onRequest' | 'preValidation', options: FastifyRateLimitOptions) {
  const app = Fastify()
  app.addHook(authIn, async (request) => {
    const user = request.headers['x-user']
    if (typeof user === 'string') request.user = user
  })
  await app.register(rateLimit, options)
  app.get('/me', async (request) => ({ user: request.user, remaining: request.rateLimit?.remaining }))
  app.post('/me', { config: { rateLimit: perUser } }, async (request) => ({ user: request.user }))
  await app.ready()
  return app
}

const as = (app: FastifyInstance, user: string, method: 'GET' | 'POST' = 'GET') =>
  app.inject({ method, url: '/me', headers: { 'x-user': user } })

describe('fastify 5: the hook option', () => {
  let redis: Redis
  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())

  for (const hook of ['preHandler', 'preValidation'] as const) {
    it(`hook: '${hook}' limits per user set by an auth hook in preValidation`, async () => {
      const app = await authedApp('preValidation', {
        store: redisStore(redis, { prefix: uniquePrefix() }),
        policy: perUser,
        hook,
        tenant: (request) => request.user as string,
      })
      const first = await as(app, 'alice')
      expect(first.statusCode).to.equal(200)
      expect(first.json()).to.deep.equal({ user: 'alice', remaining: 0 })
      const denied = await as(app, 'alice')
      expect(denied.statusCode, 'alice is out').to.equal(429)
      expect(denied.headers['retry-after']).to.equal('60')
      expect(denied.headers['content-type']).to.equal('application/problem+json')
      expect(JSON.parse(denied.body)['violated-policies']).to.deep.equal(['per-user'])
      const bob = await as(app, 'bob')
      expect(bob.statusCode, 'bob has his own window').to.equal(200)
      expect(bob.json()).to.deep.equal({ user: 'bob', remaining: 0 })
      await app.close()
    })
  }

  it('by default (onRequest) the plugin runs before a preValidation auth hook: tenant(req) fails', async () => {
    const app = await authedApp('preValidation', {
      store: memoryStore(),
      policy: perUser,
      tenant: (request) => request.user as string,
    })
    const res = await as(app, 'alice')
    expect(res.statusCode).to.equal(500)
    expect(res.json()).to.include({ code: 'ERR_FLEETLIMIT_OPTION' })
    await app.close()
  })

  it("hook: 'preHandler' after an onRequest auth hook, with the policy in a route's config.rateLimit", async () => {
    const app = await authedApp('onRequest', {
      store: memoryStore(),
      hook: 'preHandler',
      tenant: (request) => request.user as string,
    })
    expect((await as(app, 'alice', 'POST')).statusCode).to.equal(200)
    expect((await as(app, 'alice', 'POST')).statusCode).to.equal(429)
    expect((await as(app, 'bob', 'POST')).statusCode).to.equal(200)
    expect((await as(app, 'alice')).statusCode, 'GET /me has no policy').to.equal(200)
    await app.close()
  })

  it('registered twice, per IP onRequest and per user preHandler: both limit, the last decision is on the request', async () => {
    const app = Fastify()
    app.addHook('preValidation', async (request) => {
      request.user = String(request.headers['x-user'])
    })
    const store = memoryStore()
    await app.register(rateLimit, { store, policy: definePolicy({ name: 'per-ip', limit: 3, window: '1m' }) })
    await app.register(rateLimit, { store, policy: perUser, hook: 'preHandler', tenant: (r) => r.user as string })
    app.get('/me', async (request) => request.rateLimit)
    await app.ready()
    const first = await as(app, 'alice')
    expect(first.json()).to.include({ policy: 'per-user', remaining: 0 })
    expect(first.headers.ratelimit, 'both registrations’ items, in order').to.equal(
      '"per-ip";r=2;t=60, "per-user";r=0;t=60',
    )
    expect((await as(app, 'alice')).statusCode, 'per user').to.equal(429)
    expect((await as(app, 'bob')).statusCode).to.equal(200)
    const carol = await as(app, 'carol')
    expect(carol.statusCode, 'per IP: the fourth request from one address').to.equal(429)
    expect(JSON.parse(carol.body)['violated-policies']).to.deep.equal(['per-ip'])
    await app.close()
  })

  it('throws the coded OptionError at registration for any other hook', async () => {
    for (const hook of ['onSend', 'preParsing', 'prehandler', '', 1, null]) {
      const app = Fastify()
      let error: unknown
      try {
        await app.register(rateLimit, { store: memoryStore(), limit: 1, window: '1m', hook: hook as RateLimitHook })
      } catch (e) {
        error = e
      }
      expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION'), String(hook)).to.equal(true)
      expect(error).to.include({ option: 'hook', value: hook })
      expect((error as Error).message).to.include('expected one of "onRequest", "preValidation", "preHandler"')
      await app.close()
    }
  })
})
