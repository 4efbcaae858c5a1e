import { createRateLimiter, memoryStore, type RateLimiter } from '@fleetlimit/core'
import { rateLimit as expressRateLimit } from '@fleetlimit/express'
import { rateLimit as fastifyRateLimit } from '@fleetlimit/fastify'
import { rateLimit as koaRateLimit } from '@fleetlimit/koa'
import { expect } from 'chai'
import type express5 from 'express'
import type Fastify from 'fastify'
import type Koa3 from 'koa'
import sinon from 'sinon'
import request from 'supertest'
import { eachVersion } from '../support/framework-versions.js'

/**
 * The case of a request-timeout middleware ahead of the limiter: it passes the request on, then answers 503
 * before the limiter has decided (`tenant()` waits until that answer has gone out).
 */
interface Case {
  /** The limiter's options besides `limiter` and `tenant`. */
  readonly options: { readonly skipFailedRequests?: boolean }
  readonly limiter: RateLimiter
  readonly tenant: () => Promise<string>
  /** Called once the 503 has finished. */
  readonly sent: () => void
  /** Called by the route's handler, if the request gets there. */
  readonly handled: () => void
}

interface Answer {
  readonly status: number
  readonly headers: Record<string, unknown>
  readonly body: string
}

interface Framework {
  readonly name: string
  answer(c: Case): Promise<Answer>
}

const TIMEOUT = 'request timed out'

function expressFramework(name: string, express: typeof express5): Framework {
  return {
    name,
    async answer(c) {
      const app = express()
      app.use((_req, res, next) => {
        res.once('finish', c.sent)
        next()
        res.status(503).end(TIMEOUT)
      })
      app.use(expressRateLimit({ ...c.options, limiter: c.limiter, tenant: c.tenant }))
      app.get('/', () => c.handled())
      const res = await request(app).get('/')
      return { status: res.status, headers: res.headers, body: res.text }
    },
  }
}

function koaFramework(name: string, Koa: typeof Koa3): Framework {
  return {
    name,
    async answer(c) {
      const app = new Koa()
      app.use((ctx, next) => {
        ctx.res.once('finish', c.sent)
        // Promise.race([next(), timeout]) in a timeout middleware leaves next() unawaited the same way.
        void next()
        ctx.status = 503
        ctx.body = TIMEOUT
      })
      app.use(koaRateLimit({ ...c.options, limiter: c.limiter, tenant: c.tenant }))
      app.use(() => c.handled())
      const res = await request(app.callback()).get('/')
      return { status: res.status, headers: res.headers, body: res.text }
    },
  }
}

const fastifyFramework = (name: string, fastify: typeof Fastify): Framework => ({
  name,
  async answer(c) {
    const app = fastify()
    app.addHook('onRequest', (_request, reply, done) => {
      reply.raw.once('finish', c.sent)
      done()
      void reply.code(503).send(TIMEOUT)
    })
    await app.register(fastifyRateLimit, { ...c.options, limiter: c.limiter, tenant: c.tenant })
    app.get('/', async () => {
      c.handled()
      return 'ok'
    })
    try {
      const res = await app.inject({ url: '/' })
      return { status: res.statusCode, headers: res.headers, body: res.body }
    } finally {
      await app.close()
    }
  },
})

const frameworks = eachVersion({ express: expressFramework, koa: koaFramework, fastify: fastifyFramework })

/** Errors that reached the process: an unawaited callback that threw (an exit, in production). */
function watchProcess() {
  const errors: unknown[] = []
  const record = (error: unknown) => errors.push(error)
  process.prependListener('unhandledRejection', record)
  process.prependListener('uncaughtException', record)
  return {
    errors,
    stop() {
      process.off('unhandledRejection', record)
      process.off('uncaughtException', record)
    },
  }
}

/** A turn of the event loop: every continuation of a memory-store decision has run by then. */
const turn = () => new Promise((resolve) => setImmediate(resolve))

/** The result of the limiter's next call of `method`: it resolves once the call has. */
function nextResult<M extends 'consume' | 'refund'>(
  limiter: RateLimiter,
  method: M,
): Promise<Awaited<ReturnType<RateLimiter[M]>>> {
  const original = limiter[method].bind(limiter) as (...args: unknown[]) => Promise<never>
  return new Promise((resolve) => {
    limiter[method] = (async (...args: unknown[]) => {
      const result = await original(...args)
      resolve(result)
      return result
    }) as never
  })
}

describe('adapters: a response already sent before the limiter decided', () => {
  let watch: ReturnType<typeof watchProcess>
  beforeEach(() => {
    watch = watchProcess()
  })
  afterEach(() => watch.stop())

  const key = { tenant: 'k', route: '*' }
  const rateLimitHeaders = (answer: Answer) => Object.keys(answer.headers).filter((name) => name.includes('ratelimit'))

  for (const framework of frameworks) {
    describe(framework.name, () => {
      function setUp(limit: number, options: Case['options'] = {}) {
        const limiter = createRateLimiter({ store: memoryStore(), name: 'api', limit, window: '1m' })
        let sent!: () => void
        const answered = new Promise<void>((resolve) => {
          sent = resolve
        })
        const handled = sinon.fake()
        const tenant = async () => {
          await answered
          return 'k'
        }
        return { c: { options, limiter, tenant, sent, handled }, limiter, handled }
      }

      it('leaves it alone, counts the request, and throws nothing', async () => {
        const { c, limiter, handled } = setUp(5)
        const decision = nextResult(limiter, 'consume')
        const res = await framework.answer(c)
        expect(res.status).to.equal(503)
        expect(res.body).to.equal(TIMEOUT)
        expect(rateLimitHeaders(res)).to.deep.equal([])
        expect((await decision).allowed).to.equal(true)
        await turn()
        expect(watch.errors).to.deep.equal([])
        expect((await limiter.peek(key)).remaining, 'the request counted').to.equal(4)
        // Admitted, the request goes on as it would without the limiter (Fastify stops a request whose reply was sent).
        expect(handled.callCount).to.equal(framework.name.startsWith('fastify') ? 0 : 1)
      })

      it('writes no denial over it', async () => {
        const { c, limiter, handled } = setUp(1)
        await limiter.consume(key)
        const decision = nextResult(limiter, 'consume')
        const res = await framework.answer(c)
        expect(res.status).to.equal(503)
        expect(res.body).to.equal(TIMEOUT)
        expect(rateLimitHeaders(res)).to.deep.equal([])
        expect((await decision).allowed).to.equal(false)
        await turn()
        expect(watch.errors).to.deep.equal([])
        expect(handled.callCount, 'a denied request goes no further').to.equal(0)
      })

      it('with skipFailedRequests, gives back the units of the request it answered 503', async () => {
        const { c, limiter } = setUp(5, { skipFailedRequests: true })
        const refund = nextResult(limiter, 'refund')
        const res = await framework.answer(c)
        expect(res.status).to.equal(503)
        expect((await refund).outcome).to.equal('refunded')
        expect((await limiter.peek(key)).remaining).to.equal(5)
        await turn()
        expect(watch.errors).to.deep.equal([])
      })
    })
  }
})
