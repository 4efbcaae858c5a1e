import { createRateLimiter, memoryStore, type RateLimiter } from '@fleetlimit/core'
import { rateLimit as expressRateLimit } from '@fleetlimit/express'
import { rateLimit as fastifyRateLimit } from '@fleetlimit/fastify'
import { rateLimit as koaRateLimit } from '@fleetlimit/koa'
import Router from '@koa/router'
import { expect } from 'chai'
import type express5 from 'express'
import type Fastify from 'fastify'
import type Koa3 from 'koa'
import request from 'supertest'
import { eachVersion } from '../support/framework-versions.js'

/** GET /x behind two middlewares built on the limiter (app-wide, then on the route); the RateLimit header of each response. */
interface Framework {
  readonly name: string
  ratelimitHeaders(limiter: RateLimiter, requests: number): Promise<string[]>
}

const tenant = () => 'k'

function expressFramework(name: string, express: typeof express5): Framework {
  return {
    name,
    async ratelimitHeaders(limiter, requests) {
      const app = express()
      app.use(expressRateLimit({ limiter, tenant }))
      app.get('/x', expressRateLimit({ limiter, tenant }), (_req, res) => {
        res.end('ok')
      })
      const headers: string[] = []
      for (let i = 0; i < requests; i++) headers.push(String((await request(app).get('/x')).headers.ratelimit))
      return headers
    },
  }
}

function koaFramework(name: string, Koa: typeof Koa3): Framework {
  return {
    name,
    async ratelimitHeaders(limiter, requests) {
      const app = new Koa()
      app.use(koaRateLimit({ limiter, tenant }))
      const router = new Router()
      router.get('/x', koaRateLimit({ limiter, tenant }), (ctx) => {
        ctx.body = 'ok'
      })
      app.use(router.routes())
      const headers: string[] = []
      for (let i = 0; i < requests; i++)
        headers.push(String((await request(app.callback()).get('/x')).headers.ratelimit))
      return headers
    },
  }
}

const fastifyFramework = (name: string, fastify: typeof Fastify): Framework => ({
  name: `${name} (two registrations)`,
  async ratelimitHeaders(limiter, requests) {
    const app = fastify()
    await app.register(fastifyRateLimit, { limiter, tenant })
    await app.register(fastifyRateLimit, { limiter, tenant, hook: 'preHandler' })
    app.get('/x', async () => 'ok')
    const headers: string[] = []
    try {
      for (let i = 0; i < requests; i++) headers.push(String((await app.inject({ url: '/x' })).headers.ratelimit))
    } finally {
      await app.close()
    }
    return headers
  },
})

describe('adapters: middlewares built on one limiter count a request once', () => {
  for (const framework of eachVersion({ express: expressFramework, koa: koaFramework, fastify: fastifyFramework })) {
    it(framework.name, async () => {
      const store = memoryStore()
      const limiter = createRateLimiter({ store, name: 'api', limit: 3, window: '1m' })
      // The first middleware decides and sets the header; the second lets the request through as counted.
      expect(await framework.ratelimitHeaders(limiter, 3)).to.deep.equal([
        '"api";r=2;t=60',
        '"api";r=1;t=60',
        '"api";r=0;t=60',
      ])
      expect(store.size, 'one window: the first middleware keys the request').to.equal(1)
      expect((await limiter.peek({ tenant: 'k', route: '*' })).remaining).to.equal(0)
    })
  }
})
