import { createServer, request as httpRequest, type RequestListener } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRateLimiter, definePolicy, memoryStore, redisStore, type Store } from '@fleetlimit/core'
import type { HttpRateLimitOptions } from '@fleetlimit/core/http'
import { rateLimit as expressRateLimit } from '@fleetlimit/express'
import { type FastifyRateLimitOptions, rateLimit as fastifyRateLimit } from '@fleetlimit/fastify'
import { rateLimit as koaRateLimit } from '@fleetlimit/koa'
import { expect } from 'chai'
import type express5 from 'express'
import type { NextFunction, Request, Response } from 'express'
import Fastify from 'fastify'
import type Koa3 from 'koa'
import sinon from 'sinon'
import request from 'supertest'
import { eachVersion } from '../support/framework-versions.js'
import { optionErrorOfAsync } from '../support/option-error.js'
import { redisClient, uniquePrefix } from '../support/redis.js'

/** The options a test gives every framework's rateLimit, the request read as Express's, Koa's or Fastify's. */
type Options = HttpRateLimitOptions<never>
type Concurrency = NonNullable<Options['concurrency']>

/**
 * What the app's routes do: GET /work answers {"ok":true} once `work()` resolves; GET /throw throws; GET /sent
 * was answered 503 by a middleware ahead of the limiter, which passed it on all the same (a request timeout).
 */
interface Routes {
  readonly work: () => Promise<void>
}

interface Server {
  readonly url: string
  close(): Promise<void>
}

interface Framework {
  readonly name: string
  /** An app limited as a whole by `rateLimit(options)` (the plugin's own options for Fastify), listening. */
  listen(options: Options, routes: Routes): Promise<Server>
}

const OK = '{"ok":true}'
const TIMEOUT = 'request timed out'
const THROWN = 'handler failed'

async function listenOn(handler: RequestListener): Promise<Server> {
  const server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: async () => {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

function expressFramework(name: string, express: typeof express5): Framework {
  return {
    name,
    listen(options, routes) {
      const app = express()
      app.set('etag', false)
      app.use('/sent', (_req, res, next) => {
        res.status(503).end(TIMEOUT)
        next()
      })
      app.use(expressRateLimit(options as never))
      app.get('/work', (_req, res) => {
        void routes.work().then(() => res.type('application/json').send(OK))
      })
      app.get('/throw', () => {
        throw new Error(THROWN)
      })
      app.get('/sent', () => {})
      // The app's error handler: Express's error path.
      app.use((error: Error, _req: Request, res: Response, _next: NextFunction) => {
        res.status(500).type('text/plain').send(error.message)
      })
      return listenOn(app)
    },
  }
}

function koaFramework(name: string, Koa: typeof Koa3): Framework {
  return {
    name,
    listen(options, routes) {
      const app = new Koa()
      // Koa's own error handling answers a thrown error with a 500; nothing to log in a test.
      app.silent = true
      app.use(async (ctx, next) => {
        if (ctx.path !== '/sent') return next()
        ctx.respond = false
        ctx.res.statusCode = 503
        ctx.res.end(TIMEOUT)
        return next()
      })
      app.use(koaRateLimit(options as never))
      app.use(async (ctx) => {
        if (ctx.path === '/work') {
          await routes.work()
          ctx.type = 'application/json'
          ctx.body = OK
        } else if (ctx.path === '/throw') throw new Error(THROWN)
      })
      return listenOn(app.callback())
    },
  }
}

function fastifyFramework(name: string, fastify: typeof Fastify): Framework {
  return {
    name,
    async listen(options, routes) {
      const app = fastify()
      app.addHook('onRequest', (request, reply, done) => {
        done()
        if (request.url === '/sent') void reply.code(503).send(TIMEOUT)
      })
      await app.register(fastifyRateLimit, options as FastifyRateLimitOptions)
      app.get('/work', async (_request, reply) => {
        await routes.work()
        return reply.type('application/json').send(OK)
      })
      // Fastify's error handler answers it.
      app.get('/throw', async () => {
        throw new Error(THROWN)
      })
      app.get('/sent', async () => 'not sent')
      await app.listen({ port: 0, host: '127.0.0.1' })
      return {
        url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
        close: () => app.close(),
      }
    },
  }
}

// The newest version of each framework major (the lowest versions follow in eachVersion's list).
const frameworks = eachVersion({ express: expressFramework, koa: koaFramework, fastify: fastifyFramework }).slice(0, 5)

interface Exchange {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

async function get(server: Server, path: string, headers: Record<string, string> = {}): Promise<Exchange> {
  // The body as text, whatever its type, so that the bytes compared are those sent.
  const res = await request(server.url)
    .get(path)
    .set(headers)
    .buffer(true)
    .parse((response, done) => {
      let body = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => {
        body += chunk
      })
      response.on('end', () => done(null, body))
    })
  return { status: res.status, headers: res.headers as Record<string, string>, body: String(res.body) }
}

/** GET `path` over its own connection, abandoned (the socket destroyed) once `entered` resolves. */
async function abort(server: Server, path: string, entered: Promise<unknown>): Promise<void> {
  const { port } = new URL(server.url)
  const req = httpRequest({ host: '127.0.0.1', port: Number(port), path, agent: false })
  const closed = new Promise((resolve) => req.once('close', resolve))
  req.on('error', () => {}) // the hang-up this causes
  req.end()
  await entered
  req.destroy()
  await closed
}

/**
 * The handlers in flight on GET /work: each waits until the test lets it finish; `entered(n)` resolves once n
 * have started, in all.
 */
function handlersInFlight() {
  const running: (() => void)[] = []
  const waiters: { n: number; resolve: () => void }[] = []
  let started = 0
  return {
    routes: {
      work: () =>
        new Promise<void>((resolve) => {
          running.push(resolve)
          started++
          for (const waiter of waiters.filter((w) => w.n <= started)) {
            waiters.splice(waiters.indexOf(waiter), 1)
            waiter.resolve()
          }
        }),
    },
    entered: (n: number) =>
      started >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve })),
    get started() {
      return started
    },
    /** Lets the first handler still running finish. */
    finishOne: () => running.shift()?.(),
    finishAll: () => {
      for (const finish of running.splice(0)) finish()
    },
  }
}

/** The store's frees: how many calls, the slots each freed, and a signal once `n` calls have completed. */
function watchFrees(store: Store) {
  const free = (store.free as NonNullable<Store['free']>).bind(store)
  const freed: number[] = []
  const waiters: { n: number; resolve: () => void }[] = []
  store.free = async (slots) => {
    const count = await free(slots)
    freed.push(count)
    for (const waiter of waiters.filter((w) => w.n <= freed.length)) {
      waiters.splice(waiters.indexOf(waiter), 1)
      waiter.resolve()
    }
    return count
  }
  return {
    freed,
    done: (n: number) =>
      freed.length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve })),
  }
}

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

/**
 * A memory store whose clock stands still: no slot expires and no window slides while a test runs, however slow
 * the machine, so that every wait it reports is exact.
 */
const stoppedStore = () => memoryStore({ clock: () => 1_000_000 })

/** The tenant a request names in its x-tenant header, for every framework. */
const tenantHeader = (req: { headers: Record<string, unknown> }) => String(req.headers['x-tenant'] ?? 'anonymous')
/** The same for a Koa context, whose request headers are on ctx.headers too. */
const tenant = tenantHeader as unknown as NonNullable<Options['tenant']>
/** A function of the request, typed for every framework's options. */
const ofRequest = <F>(f: (req: { headers: Record<string, unknown> }) => unknown) => f as unknown as F

const problem = (status: number, policy: string, retryAfter: number) =>
  JSON.stringify({
    type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
    title: 'Too Many Requests',
    status,
    detail: `Quota exceeded for policy "${policy}"; retry in ${retryAfter} s.`,
    'violated-policies': [policy],
    'retry-after': retryAfter,
  })

describe('adapters: concurrency, requests in flight per key', () => {
  let watch: ReturnType<typeof watchProcess>
  beforeEach(() => {
    watch = watchProcess()
  })
  afterEach(() => {
    watch.stop()
    expect(watch.errors).to.deep.equal([])
  })

  let redis: ReturnType<typeof redisClient> | undefined
  after(() => redis?.quit())
  const memory = { name: 'memory store', make: (): Store => stoppedStore() }
  const onRedis = {
    name: 'Redis',
    make: (): Store => {
      redis ??= redisClient()
      return redisStore(redis, { prefix: uniquePrefix() })
    },
  }
  // The memory store for most; Redis for one test per framework.
  const cases = [
    { kind: memory, concurrencyStatusCode: undefined },
    { kind: memory, concurrencyStatusCode: 503 },
    { kind: onRedis, concurrencyStatusCode: undefined },
  ]

  for (const framework of frameworks) {
    describe(framework.name, () => {
      let server: Server | undefined
      let handlers: ReturnType<typeof handlersInFlight>
      beforeEach(() => {
        handlers = handlersInFlight()
      })
      afterEach(async () => {
        handlers.finishAll()
        await server?.close()
        server = undefined
      })
      const listen = async (options: Options) => {
        server = await framework.listen(options, handlers.routes)
        return server
      }

      for (const { kind, concurrencyStatusCode } of cases) {
        const status = concurrencyStatusCode ?? 429
        it(`3 in flight on concurrency 2: the third gets ${status} with its headers; a finished one lets a new one in (${kind.name})`, async () => {
          const store = kind.make()
          const frees = watchFrees(store)
          const app = await listen({ store, concurrency: 2, ...(concurrencyStatusCode && { concurrencyStatusCode }) })
          const first = get(app, '/work')
          const second = get(app, '/work')
          await handlers.entered(2)
          const third = await get(app, '/work')
          expect(third.status).to.equal(status)
          expect(third.headers['retry-after'], 'a slot may come back at any moment').to.equal('1')
          expect(third.headers['ratelimit-policy']).to.equal('"2-in-flight";q=2;w=60')
          expect(third.headers.ratelimit).to.equal('"2-in-flight";r=0;t=1')
          expect(third.headers['content-type']).to.equal('application/problem+json')
          expect(third.body).to.equal(problem(status, '2-in-flight', 1))
          expect(handlers.started, 'the third never reached its handler').to.equal(2)

          handlers.finishOne()
          const done = await first
          expect(done.status).to.equal(200)
          expect(done.body).to.equal(OK)
          expect(done.headers.ratelimit, 'one slot left when it was admitted').to.equal('"2-in-flight";r=1;t=60')
          await frees.done(1)
          const fourth = get(app, '/work')
          await handlers.entered(3)
          handlers.finishAll()
          expect((await second).status).to.equal(200)
          expect((await fourth).status).to.equal(200)
          await frees.done(3)
          expect(frees.freed, 'each admitted request freed its one slot, once').to.deep.equal([1, 1, 1])
        })
      }

      it('a rate policy beside: an in-flight denial answers concurrencyStatusCode after 1 s; a rate one, 429 after its wait', async () => {
        const store = stoppedStore()
        const frees = watchFrees(store)
        const app = await listen({
          store,
          name: 'api',
          limit: 2,
          window: '1m',
          concurrency: 1,
          concurrencyStatusCode: 503,
        })
        const first = get(app, '/work')
        await handlers.entered(1)
        const busy = await get(app, '/work')
        expect(busy.status, 'the rate has room: only the in-flight policy denies').to.equal(503)
        expect(busy.headers['retry-after']).to.equal('1')
        expect(busy.headers['ratelimit-policy']).to.equal('"api";q=2;w=60, "1-in-flight";q=1;w=60')
        expect(busy.headers.ratelimit).to.equal('"api";r=1;t=60, "1-in-flight";r=0;t=1')
        expect(busy.body).to.equal(problem(503, '1-in-flight', 1))

        handlers.finishOne()
        expect((await first).status).to.equal(200)
        await frees.done(1)
        const second = get(app, '/work')
        await handlers.entered(2)
        // Both deny now: the quota is spent for a minute, so the client is told that, with a 429.
        const spent = await get(app, '/work')
        expect(spent.status).to.equal(429)
        expect(spent.headers['retry-after']).to.equal('60')
        expect(spent.headers.ratelimit).to.equal('"api";r=0;t=60, "1-in-flight";r=0;t=1')
        expect(JSON.parse(spent.body)).to.include({ status: 429, 'retry-after': 60 })
        expect(JSON.parse(spent.body)['violated-policies']).to.deep.equal(['api', '1-in-flight'])
        handlers.finishAll()
        expect((await second).status).to.equal(200)
        await frees.done(2)
        expect(frees.freed).to.deep.equal([1, 1])
      })

      it('in-flight policies in `policies` are honoured the same way', async () => {
        const store = stoppedStore()
        const frees = watchFrees(store)
        const policies = [
          definePolicy({ name: 'api', limit: 10, window: '1m' }),
          definePolicy({ name: 'uploads', concurrency: 1 }),
        ]
        const app = await listen({ store, policies, concurrencyStatusCode: 503 })
        const first = get(app, '/work')
        await handlers.entered(1)
        const busy = await get(app, '/work')
        expect(busy.status).to.equal(503)
        expect(busy.headers['retry-after']).to.equal('1')
        expect(busy.headers.ratelimit).to.equal('"api";r=9;t=60, "uploads";r=0;t=1')
        handlers.finishOne()
        expect((await first).status).to.equal(200)
        await frees.done(1)
        const second = get(app, '/work')
        await handlers.entered(2)
        handlers.finishOne()
        expect((await second).status).to.equal(200)
        await frees.done(2)
        expect(frees.freed).to.deep.equal([1, 1])
      })

      it('a client that goes away mid-handler gives its slot back, once', async () => {
        const store = stoppedStore()
        const frees = watchFrees(store)
        const app = await listen({ store, concurrency: 1 })
        await abort(app, '/work', handlers.entered(1))
        await frees.done(1)
        const next = get(app, '/work')
        await handlers.entered(2)
        // The abandoned handler finishing now changes nothing: its slot was given back.
        handlers.finishAll()
        expect((await next).status).to.equal(200)
        await frees.done(2)
        expect(frees.freed).to.deep.equal([1, 1])
      })

      it('a handler that throws gives its slot back when the error response ends', async () => {
        const store = stoppedStore()
        const frees = watchFrees(store)
        const app = await listen({ store, concurrency: 1 })
        const thrown = await get(app, '/throw')
        expect(thrown.status).to.equal(500)
        await frees.done(1)
        const next = get(app, '/work')
        await handlers.entered(1)
        handlers.finishOne()
        expect((await next).status).to.equal(200)
        await frees.done(2)
        expect(frees.freed).to.deep.equal([1, 1])
      })

      it('a response another middleware sent first: the slot is given back at once', async () => {
        const store = stoppedStore()
        const frees = watchFrees(store)
        const app = await listen({ store, concurrency: 1 })
        const sent = await get(app, '/sent')
        expect(sent.status).to.equal(503)
        expect(sent.body).to.equal(TIMEOUT)
        await frees.done(1)
        expect(frees.freed).to.deep.equal([1])
        const next = get(app, '/work')
        await handlers.entered(1)
        handlers.finishOne()
        expect((await next).status).to.equal(200)
        await frees.done(2)
        expect(frees.freed).to.deep.equal([1, 1])
      })

      it('concurrency(req): two tenants, each its own limit', async () => {
        const store = stoppedStore()
        const concurrency = ofRequest<Concurrency>((req) => (tenantHeader(req) === 'small' ? 1 : 2))
        const app = await listen({ store, tenant, concurrency })
        const small = { 'x-tenant': 'small' }
        const large = { 'x-tenant': 'large' }
        const inFlight = [get(app, '/work', small), get(app, '/work', large), get(app, '/work', large)]
        await handlers.entered(3)
        const [smallDenied, largeDenied] = [await get(app, '/work', small), await get(app, '/work', large)]
        expect(smallDenied.status).to.equal(429)
        expect(smallDenied.headers['ratelimit-policy']).to.equal('"in-flight";q=1;w=60')
        expect(smallDenied.headers.ratelimit).to.equal('"in-flight";r=0;t=1')
        expect(largeDenied.status).to.equal(429)
        expect(largeDenied.headers['ratelimit-policy']).to.equal('"in-flight";q=2;w=60')
        handlers.finishAll()
        expect((await Promise.all(inFlight)).map((e) => e.status)).to.deep.equal([200, 200, 200])
      })

      it('an async concurrency(req), beside a limit(req) of plans', async () => {
        const store = stoppedStore()
        const concurrency = ofRequest<Concurrency>(async () => 1)
        const limit = ofRequest<NonNullable<Options['limit']>>(async () => 5)
        const app = await listen({ store, tenant, limit, window: '1m', concurrency })
        const first = get(app, '/work')
        await handlers.entered(1)
        const busy = await get(app, '/work')
        expect(busy.status).to.equal(429)
        expect(busy.headers['ratelimit-policy']).to.equal('"plan-per-60000ms";q=5;w=60, "in-flight";q=1;w=60')
        expect(busy.headers.ratelimit).to.equal('"plan-per-60000ms";r=4;t=60, "in-flight";r=0;t=1')
        handlers.finishOne()
        expect((await first).status).to.equal(200)
      })

      it('a concurrency(req) that throws or returns no whole number fails that request alone; no slot is taken', async () => {
        const store = stoppedStore()
        const frees = watchFrees(store)
        const values: Record<string, unknown> = { zero: 0, half: 1.5, text: '2', nan: Number.NaN, big: 2_000_000 }
        const concurrency = ofRequest<Concurrency>((req) => {
          const name = tenantHeader(req)
          if (name === 'throws') throw new Error('plan lookup failed')
          if (name === 'rejects') return Promise.reject(new Error('plan lookup failed'))
          return name in values ? values[name] : 1
        })
        const logger = { warn: sinon.spy() }
        const app = await listen({ store, tenant, concurrency, logger })
        for (const name of Object.keys(values)) {
          const res = await get(app, '/work', { 'x-tenant': name })
          expect(res.status, name).to.equal(500)
          expect(res.headers['content-type'], name).to.equal('application/problem+json')
          expect(JSON.parse(res.body), name).to.include({
            detail: 'The rate limiter could not decide on this request: invalid `concurrency(req)`.',
            code: 'ERR_FLEETLIMIT_OPTION',
          })
        }
        // Its own error goes to the framework's error handling, as a limit(req) that throws does.
        for (const name of ['throws', 'rejects']) {
          const res = await get(app, '/work', { 'x-tenant': name })
          expect(res.status, name).to.equal(500)
        }
        expect(handlers.started, 'none of them got through').to.equal(0)
        // Said once, as every request error of one kind is.
        expect(logger.warn.callCount).to.equal(1)
        expect(logger.warn.firstCall.args[0]).to.contain('invalid option `concurrency(req)`: got 0;')
        const ok = get(app, '/work', { 'x-tenant': 'fine' })
        await handlers.entered(1)
        handlers.finishOne()
        expect((await ok).status).to.equal(200)
        await frees.done(1)
        expect(frees.freed, 'only the admitted request held a slot').to.deep.equal([1])
      })

      it('500 requests at once on one key with concurrency 5: exactly 5 admitted', async () => {
        const store = stoppedStore()
        const frees = watchFrees(store)
        const app = await listen({ store, concurrency: 5 })
        // Only a denied request is answered while the gate is shut: once 495 are, every decision has been made.
        const answered: Exchange[] = []
        let allAnswered!: () => void
        const denialsIn = new Promise<void>((resolve) => {
          allAnswered = resolve
        })
        const all = Array.from({ length: 500 }, () =>
          get(app, '/work').then((exchange) => {
            answered.push(exchange)
            if (answered.length === 495) allAnswered()
            return exchange
          }),
        )
        const first = await Promise.race([denialsIn.then(() => 'denials'), handlers.entered(6).then(() => 'sixth')])
        expect(first).to.equal('denials')
        expect(handlers.started).to.equal(5)
        expect(answered.map((e) => e.status)).to.deep.equal(Array(495).fill(429))
        handlers.finishAll()
        const exchanges = await Promise.all(all)
        expect(exchanges.filter((e) => e.status === 200)).to.have.length(5)
        await frees.done(5)
        expect(frees.freed).to.deep.equal([1, 1, 1, 1, 1])
      })
    })
  }
})

describe('fastify: an in-flight policy in a route’s config.rateLimit', () => {
  it('limits that route alone, and releases its slots as the plugin’s own do', async () => {
    const store = stoppedStore()
    const frees = watchFrees(store)
    const handlers = handlersInFlight()
    const app = Fastify()
    await app.register(fastifyRateLimit, { store, concurrencyStatusCode: 503 })
    const uploads = [definePolicy({ name: 'uploads', concurrency: 1 })]
    app.post('/upload', { config: { rateLimit: uploads } }, async () => {
      await handlers.routes.work()
      return { ok: true }
    })
    app.get('/free', async () => ({ ok: true }))
    try {
      const first = app.inject({ method: 'POST', url: '/upload' })
      await handlers.entered(1)
      const busy = await app.inject({ method: 'POST', url: '/upload' })
      expect(busy.statusCode).to.equal(503)
      expect(busy.headers['retry-after']).to.equal('1')
      expect(busy.headers.ratelimit).to.equal('"uploads";r=0;t=1')
      expect((await app.inject({ url: '/free' })).statusCode, 'another route is not limited').to.equal(200)
      handlers.finishOne()
      expect((await first).statusCode).to.equal(200)
      await frees.done(1)
      const next = app.inject({ method: 'POST', url: '/upload' })
      await handlers.entered(2)
      handlers.finishOne()
      expect((await next).statusCode).to.equal(200)
      await frees.done(2)
      expect(frees.freed).to.deep.equal([1, 1])
    } finally {
      handlers.finishAll()
      await app.close()
    }
  })
})

describe('adapters: concurrency options checked at construction', () => {
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
  const store = memoryStore()

  for (const adapter of adapters) {
    describe(adapter.name, () => {
      it('a concurrency that is no whole number from 1 to 1000000, nor a function, names `concurrency`', async () => {
        for (const value of [0, -1, 1.5, '3', Number.NaN, null, {}, true, 1_000_001]) {
          const error = await optionErrorOfAsync(() => adapter.build({ store, concurrency: value }))
          expect(error.option, String(value)).to.equal('concurrency')
          expect(error.message, String(value)).to.match(/expected a whole number from 1 to 1000000/)
          // Beside a rate policy, the same.
          const beside = await optionErrorOfAsync(() =>
            adapter.build({ store, limit: 5, window: '1m', concurrency: value }),
          )
          expect(beside.option, String(value)).to.equal('concurrency')
        }
      })

      it('slotTtlMs without concurrency, or not a duration; concurrencyStatusCode not a status', async () => {
        const stray = await optionErrorOfAsync(() => adapter.build({ store, limit: 5, window: '1m', slotTtlMs: '1m' }))
        expect(stray.option).to.equal('slotTtlMs')
        expect(stray.message).to.contain('no slotTtlMs without `concurrency`')
        const zero = await optionErrorOfAsync(() => adapter.build({ store, concurrency: 2, slotTtlMs: 0 }))
        expect(zero.option).to.equal('slotTtlMs')
        for (const value of [200, '503', 600]) {
          const status = await optionErrorOfAsync(() =>
            adapter.build({ store, concurrency: 2, concurrencyStatusCode: value }),
          )
          expect(status.option, String(value)).to.equal('concurrencyStatusCode')
        }
      })

      it('concurrency beside `limiter`, or beside a rate option with no rate, names what to change', async () => {
        const limiter = createRateLimiter({ store, limit: 5, window: '1m' })
        const beside = await optionErrorOfAsync(() => adapter.build({ limiter, concurrency: 2 }))
        expect(beside.option).to.equal('concurrency')
        expect(beside.message).to.contain('definePolicy({ concurrency })')
        const blocked = await optionErrorOfAsync(() => adapter.build({ store, concurrency: 2, blockFor: '1m' }))
        expect(blocked.option).to.equal('blockFor')
        const plans = await optionErrorOfAsync(() => adapter.build({ store, concurrency: 2, limit: () => 5 }))
        expect(plans.option).to.equal('limit')
      })
    })
  }
})
