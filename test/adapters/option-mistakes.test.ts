import { definePolicy, memoryStore } from '@fleetlimit/core'
import { rateLimit as expressRateLimit } from '@fleetlimit/express'
import { type FastifyRateLimitOptions, rateLimit as fastifyRateLimit } from '@fleetlimit/fastify'
import { rateLimit as koaRateLimit } from '@fleetlimit/koa'
import Router from '@koa/router'
import { expect } from 'chai'
import express5 from 'express'
import express4 from 'express4'
import Fastify from 'fastify'
import Koa3 from 'koa'
import Koa2 from 'koa2'
import sinon from 'sinon'
import request from 'supertest'
import { optionErrorOfAsync } from '../support/option-error.js'

const optionError = optionErrorOfAsync

/** Builds the adapter's limiter from options, as its users do; Fastify's at registration. */
const adapters: readonly { name: string; build: (options: object) => unknown }[] = [
  { name: 'express', build: (options) => expressRateLimit(options as never) },
  { name: 'koa', build: (options) => koaRateLimit(options as never) },
  {
    name: 'fastify',
    build: async (options) => {
      const app = Fastify()
      try {
        await app.register(fastifyRateLimit, options as FastifyRateLimitOptions)
        await app.ready()
      } finally {
        await app.close()
      }
    },
  },
]

const FACTORY =
  "fleetlimit: rateLimit is a factory: call it with options, app.use(rateLimit({ limit: 100, window: '1m' }))."
const FACTORY_BODY =
  '{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"rateLimit is a factory: call it with options, app.use(rateLimit({ limit: 100, window: \'1m\' }))","code":"ERR_FLEETLIMIT_OPTION"}'
const PLUGIN =
  "fleetlimit: rateLimit is a Fastify plugin, not a factory: register it with its options, app.register(rateLimit, { limit: 100, window: '1m' })."

describe('adapters: mistakes caught where they are made', () => {
  for (const adapter of adapters) {
    describe(adapter.name, () => {
      it('a function where a policy value belongs throws the coded OptionError at construction', async () => {
        for (const [option, value] of [
          ['name', () => 'x'],
          ['onStoreError', () => 'fail-open'],
          ['timeoutMs', () => 50],
        ] as const) {
          const error = await optionError(() =>
            adapter.build({ store: memoryStore(), limit: 5, window: '1m', [option]: value }),
          )
          expect(error.option).to.equal(option)
          expect(error.message).to.match(
            /: of the policy options, only `limit`, `cost` and `concurrency` may be functions of the request\.$/,
          )
        }
      })

      it("a peer's option names get ours, with the units", async () => {
        const error = await optionError(() => adapter.build({ windowMs: 60_000, max: 100 }))
        expect(error.message).to.equal(
          "fleetlimit: unknown option `rateLimit.windowMs` (got 60000): `windowMs: 60000` (milliseconds): fleetlimit calls it `window`: `window: 60000` or `window: '1m'`.",
        )
        const duration = await optionError(() => adapter.build({ points: 10, duration: 60 }))
        expect(duration.message).to.equal(
          'fleetlimit: unknown option `rateLimit.points` (got 10): `points: 10`: fleetlimit calls it `limit`: `limit: 10`.',
        )
      })
    })
  }

  it('fastify: peer options without a policy of the plugin’s own are not ignored', async () => {
    const error = await optionError(
      adapters[2]?.build.bind(null, { max: 100, timeWindow: '1 minute' }) as () => unknown,
    )
    expect(error.message).to.equal(
      'fleetlimit: unknown option `rateLimit.max` (got 100): `max: 100`: fleetlimit calls it `limit`: `limit: 100`.',
    )
    const fn = await optionError(adapters[2]?.build.bind(null, { onStoreError: () => 'fail-open' }) as () => unknown)
    expect(fn.option).to.equal('onStoreError')
  })

  const expresses = [
    ['express 5', express5],
    ['express 4', express4 as unknown as typeof express5],
  ] as const
  for (const [name, express] of expresses) {
    it(`${name}: app.use(rateLimit) answers 500 problem+json naming the fix, said once on the console per app`, async () => {
      const warn = sinon.stub(console, 'warn')
      try {
        const app = express()
        app.disable('x-powered-by')
        app.use(expressRateLimit as never)
        app.get('/', (_req, res) => {
          res.send('reached')
        })
        for (let i = 0; i < 2; i++) {
          const res = await request(app).get('/')
          expect(res.status).to.equal(500)
          expect(res.headers['content-type']).to.equal('application/problem+json')
          expect(res.text).to.equal(FACTORY_BODY)
        }
        const other = express()
        other.get('/x', expressRateLimit as never, (_req, res) => {
          res.send('reached')
        })
        expect((await request(other).get('/x')).text).to.equal(FACTORY_BODY)
        expect(warn.getCalls().map((call) => call.args[0])).to.deep.equal([FACTORY, FACTORY])
      } finally {
        warn.restore()
      }
    })
  }

  const koas = [
    ['koa 3', Koa3],
    ['koa 2', Koa2 as unknown as typeof Koa3],
  ] as const
  for (const [name, Koa] of koas) {
    it(`${name}: app.use(rateLimit) and router.get(path, rateLimit) answer the same 500, said once per app`, async () => {
      const warn = sinon.stub(console, 'warn')
      try {
        const app = new Koa()
        app.use(koaRateLimit as never)
        app.use((ctx) => {
          ctx.body = 'reached'
        })
        for (let i = 0; i < 2; i++) {
          const res = await request(app.callback()).get('/')
          expect(res.status).to.equal(500)
          expect(res.headers['content-type']).to.equal('application/problem+json')
          expect(res.text).to.equal(FACTORY_BODY)
        }
        const routed = new Koa()
        const router = new Router()
        router.get('/x', koaRateLimit as never, (ctx) => {
          ctx.body = 'reached'
        })
        routed.use(router.routes())
        expect((await request(routed.callback()).get('/x')).text).to.equal(FACTORY_BODY)
        expect(warn.getCalls().map((call) => call.args[0])).to.deep.equal([FACTORY, FACTORY])
      } finally {
        warn.restore()
      }
    })
  }

  it('express and koa: the factory-misuse answers are byte for byte alike', async () => {
    const warn = sinon.stub(console, 'warn')
    try {
      const app = express5()
      app.disable('x-powered-by')
      app.use(expressRateLimit as never)
      const koa = new Koa3()
      koa.use(koaRateLimit as never)
      const seen = []
      for (const res of [await request(app).get('/'), await request(koa.callback()).get('/')]) {
        const { date: _d, connection: _c, 'keep-alive': _k, ...headers } = res.headers
        seen.push({ status: res.status, headers, body: res.text })
      }
      expect(seen[1]).to.deep.equal(seen[0])
    } finally {
      warn.restore()
    }
  })

  it('fastify: rateLimit() or rateLimit({ … }) throws where it is called, naming register', async () => {
    for (const call of [
      () => (fastifyRateLimit as unknown as () => unknown)(),
      () => fastifyRateLimit({ limit: 100 } as never, {}),
    ]) {
      const error = await optionError(call)
      expect(error.message).to.equal(PLUGIN)
      expect(error.option).to.equal('rateLimit')
    }
  })

  const NOTHING_LIMITED =
    "fleetlimit: the rateLimit plugin was registered with no limit of its own and no route declared after it has a config.rateLimit, so it limits no request. Pass it a limit to limit every route (app.register(rateLimit, { limit: 100, window: '1m' }), or policy, policies or limiter), or give the routes to limit their own: { config: { rateLimit: policy } }."

  it('fastify: app.register(rateLimit) that limits no route says so once, at ready, and how to limit', async () => {
    const warn = sinon.stub(console, 'warn')
    try {
      const app = Fastify()
      await app.register(fastifyRateLimit)
      app.get('/', async () => 'ok')
      app.get('/off', { config: { rateLimit: false } }, async () => 'ok')
      expect(warn.callCount, 'not before ready').to.equal(0)
      await app.ready()
      await app.ready()
      expect(warn.args).to.deep.equal([[NOTHING_LIMITED]])
      await app.close()
    } finally {
      warn.restore()
    }
    const logger = { warn: sinon.fake() }
    const app = Fastify()
    await app.register(fastifyRateLimit, { logger, headers: 'draft-7' })
    await app.ready()
    expect(logger.warn.args).to.deep.equal([[NOTHING_LIMITED]])
    await app.close()
  })

  it('fastify: no such warning when the plugin has a policy, or a route has its own', async () => {
    const logger = { warn: sinon.fake() }
    for (const options of [{ limit: 5, window: '1m' }, {}] as FastifyRateLimitOptions[]) {
      const app = Fastify()
      await app.register(fastifyRateLimit, { logger, ...options })
      await app.register(async (child) => {
        child.get('/child', { config: { rateLimit: { limit: 1, window: '1m' } } }, async () => 'ok')
      })
      await app.ready()
      await app.close()
    }
    expect(logger.warn.callCount).to.equal(0)
  })

  it('fastify: app.register(rateLimit) without options is legitimate: only routes with config.rateLimit are limited', async () => {
    const app = Fastify()
    await app.register(fastifyRateLimit)
    app.get(
      '/limited',
      { config: { rateLimit: definePolicy({ name: 'one', limit: 1, window: '1m' }) } },
      async () => 'ok',
    )
    app.get('/free', async () => 'ok')
    await app.ready()
    try {
      expect((await app.inject('/limited')).statusCode).to.equal(200)
      expect((await app.inject('/limited')).statusCode).to.equal(429)
      for (let i = 0; i < 3; i++) expect((await app.inject('/free')).statusCode).to.equal(200)
    } finally {
      await app.close()
    }
  })
})
