import { definePolicy, type Logger, type Store } from '@fleetlimit/core'
import type { HttpRateLimitOptions } from '@fleetlimit/core/http'
import { rateLimit as expressRateLimit } from '@fleetlimit/express'
import { type FastifyRateLimitOptions, rateLimit as fastifyRateLimit } from '@fleetlimit/fastify'
import { rateLimit as koaRateLimit } from '@fleetlimit/koa'
import Router from '@koa/router'
import { expect } from 'chai'
import express from 'express'
import Fastify from 'fastify'
import Koa from 'koa'
import sinon from 'sinon'
import request from 'supertest'
import type { Exchange } from '../support/adapter-harness.js'
import { adapterStores } from '../support/adapter-stores.js'

/** The options of one middleware, the request read as Express's, Koa's or Fastify's. */
type Options = HttpRateLimitOptions<never>

interface App {
  get(path: string): Promise<Exchange>
  close(): Promise<void>
}

/**
 * An app whose routes pass two rate-limit middlewares in a row, `first` then `second`: on the route in Express and
 * Koa (`app.get('/same', rateLimit(first), rateLimit(second), h)`), two registrations of the plugin in Fastify
 * (the second in preHandler). GET /same answers {"ok":true}, GET /fail 400.
 */
interface Framework {
  readonly name: string
  build(first: Options, second: Options): Promise<App>
}

const OK = '{"ok":true}'

const frameworks: readonly Framework[] = [
  {
    name: 'express',
    async build(first, second) {
      const app = express()
      const limit = () => [expressRateLimit(first as never), expressRateLimit(second as never)]
      app.get('/same', ...limit(), (_req, res) => {
        res.type('application/json').send(OK)
      })
      app.get('/fail', ...limit(), (_req, res) => {
        res.status(400).type('application/json').send(OK)
      })
      return supertestApp(app)
    },
  },
  {
    name: 'koa',
    async build(first, second) {
      const app = new Koa()
      const router = new Router()
      const limit = () => [koaRateLimit(first as never), koaRateLimit(second as never)]
      router.get('/same', ...limit(), (ctx) => {
        ctx.body = { ok: true }
      })
      router.get('/fail', ...limit(), (ctx) => {
        ctx.status = 400
        ctx.body = { ok: true }
      })
      app.use(router.routes())
      return supertestApp(app.callback())
    },
  },
  {
    name: 'fastify',
    async build(first, second) {
      const app = Fastify()
      await app.register(fastifyRateLimit, first as FastifyRateLimitOptions)
      await app.register(fastifyRateLimit, { ...(second as FastifyRateLimitOptions), hook: 'preHandler' })
      app.get('/same', async () => ({ ok: true }))
      app.get('/fail', async (_request, reply) => reply.code(400).send({ ok: true }))
      await app.ready()
      return {
        async get(path) {
          const res = await app.inject({ method: 'GET', url: path })
          return { status: res.statusCode, headers: res.headers as Record<string, string>, body: res.body }
        },
        close: () => app.close(),
      }
    },
  },
]

function supertestApp(handler: Parameters<typeof request>[0]): App {
  return {
    async get(path) {
      const res = await request(handler).get(path)
      return { status: res.status, headers: res.headers as Record<string, string>, body: res.text }
    },
    close: async () => {},
  }
}

/** Resolves once `n` calls of the store's `method` (a refund, a free) have completed: no sleep. */
function watch(store: Store, method: 'refund' | 'free') {
  const original = (store[method] as (...args: unknown[]) => Promise<unknown>).bind(store)
  const results: unknown[] = []
  const waiters: { n: number; resolve: () => void }[] = []
  Object.assign(store, {
    [method]: async (...args: unknown[]) => {
      const result = await original(...args)
      results.push(result)
      for (const waiter of waiters.filter((w) => w.n <= results.length)) {
        waiters.splice(waiters.indexOf(waiter), 1)
        waiter.resolve()
      }
      return result
    },
  })
  return {
    results,
    done: (n: number) =>
      results.length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve })),
  }
}

const statuses = (exchanges: readonly Exchange[]) => exchanges.map((e) => e.status)
const quiet = (): Logger => ({ warn: sinon.fake() })
const warnings = (logger: Logger) => (logger.warn as sinon.SinonSpy).getCalls().map((call) => String(call.args[0]))

describe('adapters: a request is counted once per policy key, however many middlewares name it', () => {
  const stores = adapterStores()
  for (const framework of frameworks) {
    describe(framework.name, () => {
      for (const kind of stores) {
        it(`two middlewares of one policy on one store count it once, and send its headers once (${kind.name})`, async () => {
          const store = kind.make()
          const options = { store, limit: 5, window: '1m' as const }
          const app = await framework.build(options, options)
          try {
            const seen: Exchange[] = []
            for (let i = 0; i < 6; i++) seen.push(await app.get('/same'))
            expect(statuses(seen)).to.deep.equal([200, 200, 200, 200, 200, 429])
            expect(seen[0]?.headers['ratelimit-policy']).to.equal('"5-per-60000ms";q=5;w=60')
            expect(seen.slice(0, 5).map((e) => e.headers.ratelimit)).to.deep.equal([
              '"5-per-60000ms";r=4;t=60',
              '"5-per-60000ms";r=3;t=60',
              '"5-per-60000ms";r=2;t=60',
              '"5-per-60000ms";r=1;t=60',
              '"5-per-60000ms";r=0;t=60',
            ])
            expect(seen[5]?.headers['ratelimit-policy']).to.equal('"5-per-60000ms";q=5;w=60')
          } finally {
            await app.close()
          }
        })

        it(`a policy counted by the first beside another only in the second is refused at the second (${kind.name})`, async () => {
          const store = kind.make()
          const api = definePolicy({ name: 'api', limit: 3, window: '1m', scope: 'tenant' })
          const search = definePolicy({ name: 'search', limit: 100, window: '1m', scope: 'tenant' })
          const logger = quiet()
          const app = await framework.build({ store, policy: api, logger }, { store, policies: [api, search], logger })
          try {
            const first = await app.get('/same')
            expect(first.status, first.body).to.equal(500)
            expect(JSON.parse(first.body).code).to.equal('ERR_FLEETLIMIT_OPTION')
            expect(warnings(logger)).to.have.length(1)
            expect(warnings(logger)[0]).to.include(
              'invalid option `policies`: got "api"; expected policies this request was not counted in yet: ' +
                'policy "api" counted it in an earlier rateLimit middleware on the same store',
            )
          } finally {
            await app.close()
          }
        })

        it(`a second middleware whose every policy the first counted takes its decision (${kind.name})`, async () => {
          const store = kind.make()
          const api = definePolicy({ name: 'api', limit: 3, window: '1m', scope: 'tenant' })
          const search = definePolicy({ name: 'search', limit: 100, window: '1m', scope: 'tenant' })
          const app = await framework.build({ store, policies: [api, search] }, { store, policy: api })
          try {
            const seen: Exchange[] = []
            for (let i = 0; i < 4; i++) seen.push(await app.get('/same'))
            expect(statuses(seen)).to.deep.equal([200, 200, 200, 429])
            expect(seen[2]?.headers['ratelimit-policy']).to.equal('"api";q=3;w=60, "search";q=100;w=60')
            expect(seen[2]?.headers.ratelimit).to.equal('"api";r=0;t=60, "search";r=97;t=60')
          } finally {
            await app.close()
          }
        })

        it(`a second middleware asking another cost is refused, not counted twice (${kind.name})`, async () => {
          const store = kind.make()
          const logger = quiet()
          const app = await framework.build(
            { store, limit: 5, window: '1m' as const, logger },
            { store, limit: 5, window: '1m' as const, cost: 2, logger },
          )
          try {
            const first = await app.get('/same')
            expect(first.status, first.body).to.equal(500)
            expect(warnings(logger)[0]).to.include(
              'invalid option `cost`: got 2; expected the cost an earlier rateLimit middleware counted this request ' +
                'at on policy "5-per-60000ms" (1)',
            )
          } finally {
            await app.close()
          }
        })

        it(`skipFailedRequests gives a failed request's units back once (${kind.name})`, async () => {
          const store = kind.make()
          const refunds = watch(store, 'refund')
          const api = definePolicy({ name: 'api', limit: 2, window: '1m', scope: 'tenant' })
          const options = { store, policy: api, skipFailedRequests: true }
          const app = await framework.build(options, options)
          try {
            for (let i = 0; i < 3; i++) {
              const failed = await app.get('/fail')
              expect(failed.status).to.equal(400)
              expect(failed.headers.ratelimit).to.equal('"api";r=1;t=60')
              await refunds.done(i + 1)
            }
            expect(refunds.results).to.deep.equal([1, 2, 3].map(() => ({ units: 1, outcome: 'refunded' })))
            const seen = [await app.get('/same'), await app.get('/same'), await app.get('/same')]
            expect(statuses(seen)).to.deep.equal([200, 200, 429])
            expect(refunds.results, 'one refund per failed request').to.have.length(3)
          } finally {
            await app.close()
          }
        })

        it(`an in-flight limit in both takes one slot and releases it once (${kind.name})`, async () => {
          const store = kind.make()
          const frees = watch(store, 'free')
          const options = { store, concurrency: 1 }
          const app = await framework.build(options, options)
          try {
            for (let i = 0; i < 3; i++) {
              const done = await app.get('/same')
              expect([done.status, done.body]).to.deep.equal([200, OK])
              await frees.done(i + 1)
            }
            expect(frees.results, 'one slot freed per request').to.deep.equal([1, 1, 1])
          } finally {
            await app.close()
          }
        })
      }
    })
  }

  it("two apps' middlewares giving one policy name two limits on one store are told once (express)", async () => {
    const store = (stores[0] as (typeof stores)[number]).make()
    const logger = quiet()
    const app = express()
    app.use('/a', expressRateLimit({ store, name: 'api', limit: 5, window: '1m', logger }))
    app.use('/b', expressRateLimit({ store, name: 'api', limit: 100, window: '1m', logger }))
    app.use('/c', expressRateLimit({ store, name: 'api', limit: 100, window: '1m', logger }))
    expect(warnings(logger)).to.have.length(1)
    expect(warnings(logger)[0]).to.include(
      'policy "api" has two limits on one store (ERR_FLEETLIMIT_POLICY_CONFLICT): limit 100 per 60000 ms here, ' +
        'limit 5 per 60000 ms in a limiter built before.',
    )
  })

  it('two middlewares on two stores count in a window of each (express, memory stores)', async () => {
    const [memory] = stores as [(typeof stores)[number]]
    const app = await (frameworks[0] as Framework).build(
      { store: memory.make(), limit: 5, window: '1m' },
      { store: memory.make(), limit: 2, window: '1m' },
    )
    try {
      const seen = [await app.get('/same'), await app.get('/same'), await app.get('/same')]
      expect(statuses(seen)).to.deep.equal([200, 200, 429])
      expect(seen[0]?.headers['ratelimit-policy']).to.equal('"5-per-60000ms";q=5;w=60, "2-per-60000ms";q=2;w=60')
    } finally {
      await app.close()
    }
  })
})
