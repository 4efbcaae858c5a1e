import { createServer, request as httpRequest, type RequestListener } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Decision, Policy } from '@fleetlimit/core'
import type { HttpRateLimitOptions } from '@fleetlimit/core/http'
import { rateLimit as expressRateLimit } from '@fleetlimit/express'
import { rateLimit as fastifyRateLimit } from '@fleetlimit/fastify'
import { rateLimit as koaRateLimit } from '@fleetlimit/koa'
import Router from '@koa/router'
import express5, { type Request } from 'express'
import expressLowest from 'express-lowest'
import express4 from 'express4'
import express4Lowest from 'express4-lowest'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import FastifyLowest from 'fastify-lowest'
import Koa3, { type Context } from 'koa'
import KoaLowest from 'koa-lowest'
import Koa2 from 'koa2'
import Koa2Lowest from 'koa2-lowest'
import request from 'supertest'

/** One response as the client saw it. */
export interface Exchange {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

/** Options shared by the app-level and route-level limiters: everything but the policy. */
export type SharedOptions = Omit<HttpRateLimitOptions<never>, 'limit' | 'window' | 'policy' | 'policies' | 'limiter'>

/**
 * One app, the same on every framework: GET /users/:id, GET /search, a router mounted under /api with
 * GET /api/items/:id, a route of every method, /api/op, and one of GET and POST, /api/multi, and one mounted under a pattern with
 * GET /users/:uid/posts, each answering {"ok":true}. GET /files/:name, POST /files/upload and
 * DELETE /files/archive: routes whose paths overlap, of other methods. `route` limits every route (per-route
 * middleware, or Fastify's `config.rateLimit`); `app` limits the whole app (app.use, or the plugin's own policy).
 * Also GET /status/:code answers {"ok":true} with that status, and GET /wait answers once `wait()` has resolved.
 */
export interface AppSpec {
  readonly shared?: SharedOptions
  readonly app?: Policy
  readonly route?: Policy | readonly Policy[] | false
  readonly trustProxy?: boolean
  /** The tenant: from the `t` query parameter instead of the client IP. */
  readonly tenantFromQuery?: boolean
  /** Express and Koa: use one middleware instance both at app level and inside the /api router. */
  readonly sameMiddlewareTwice?: boolean
  /** Each route answers `{"rateLimit": …}`: the decision its handler reads off the request (null when unset). */
  readonly echoDecision?: boolean
  /** Called by GET /wait's handler, which answers once the promise resolves. */
  readonly wait?: () => Promise<void>
  /**
   * Fastify: `route` (one policy) is a second registration of the plugin, in preHandler, instead of each route's
   * `config.rateLimit` (which replaces the plugin's policy): the app's and the route's limiters stacked, as
   * `app` and `route` are in Express and Koa.
   */
  readonly stacked?: boolean
}

/** The methods a test may send: those every framework routes (Fastify's `app.all` takes these). */
export const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const
export type Method = (typeof METHODS)[number]

export interface TestApp {
  request(method: Method, path: string, headers?: Record<string, string>): Promise<Exchange>
  /**
   * Sends GET `path` over a real connection and, once `entered` resolves (say, when the handler has started),
   * destroys the socket without waiting for the response; resolves when the client's side has closed.
   */
  abort(path: string, entered: Promise<unknown>): Promise<void>
  close(): Promise<void>
}

export interface Flavour {
  readonly name: string
  build(spec: AppSpec): Promise<TestApp>
}

const OK = '{"ok":true}'

/** A handler's answer: {"ok":true}, or the decision it was handed when the spec asks for it. */
const answer = (spec: AppSpec, decision: Decision | undefined) =>
  spec.echoDecision ? { rateLimit: decision ?? null } : { ok: true }

function routeOptions(route: AppSpec['route']) {
  if (route === undefined || route === false) return undefined
  return Array.isArray(route) ? { policies: route as readonly Policy[] } : { policy: route as Policy }
}

/** The shared options, with the flavour's way of reading the tenant from the query when asked. */
function shared<Req>(spec: AppSpec, tenant: (req: Req) => string): HttpRateLimitOptions<Req> {
  return { ...(spec.shared as HttpRateLimitOptions<Req>), ...(spec.tenantFromQuery && { tenant }) }
}

function expressFlavour(name: string, express: typeof express5): Flavour {
  return {
    name,
    async build(spec) {
      const app = express()
      app.disable('x-powered-by')
      app.set('etag', false)
      if (spec.trustProxy) app.set('trust proxy', true)
      const options = shared<Request>(spec, (req) => String(req.query.t))
      const perRoute = routeOptions(spec.route)
      const limit = () => (perRoute ? [expressRateLimit({ ...options, ...perRoute })] : [])
      const ok = (req: Request, res: express5.Response) => {
        res.type('application/json').send(spec.echoDecision ? JSON.stringify(answer(spec, req.rateLimit)) : OK)
      }
      const appLimit = spec.app && expressRateLimit({ ...options, policy: spec.app })
      if (appLimit) app.use(appLimit)
      app.get('/users/:id', ...limit(), ok)
      app.get('/search', ...limit(), ok)
      app.get('/status/:code', ...limit(), (req, res) => {
        res.status(Number(req.params.code)).type('application/json').send(OK)
      })
      app.get('/wait', ...limit(), (req, res) => {
        void (spec.wait?.() ?? Promise.resolve()).then(() => ok(req, res))
      })
      const router = express.Router()
      if (spec.sameMiddlewareTwice && appLimit) router.use(appLimit)
      router.get('/items/:id', ...limit(), ok)
      router.all('/op', ...limit(), ok)
      const multi = limit()
      router
        .route('/multi')
        .get(...multi, ok)
        .post(...multi, ok)
      app.use('/api', router)
      app.get('/files/:name', ...limit(), ok)
      app.post('/files/upload', ...limit(), ok)
      app.delete('/files/archive', ...limit(), ok)
      const users = express.Router()
      users.get('/posts', ...limit(), ok)
      app.use('/users/:uid', users)
      return supertestApp(app)
    },
  }
}

function koaFlavour(name: string, Koa: typeof Koa3): Flavour {
  return {
    name,
    async build(spec) {
      const app = new Koa()
      if (spec.trustProxy) app.proxy = true
      const options = shared<Context>(spec, (ctx) => String(ctx.query.t))
      const perRoute = routeOptions(spec.route)
      const limit = () => (perRoute ? [koaRateLimit({ ...options, ...perRoute })] : [])
      const ok = (ctx: Context) => {
        ctx.body = answer(spec, ctx.state.rateLimit)
      }
      const appLimit = spec.app && koaRateLimit({ ...options, policy: spec.app })
      if (appLimit) app.use(appLimit)
      const router = new Router()
      router.get('/users/:id', ...limit(), ok)
      router.get('/search', ...limit(), ok)
      router.get('/status/:code', ...limit(), (ctx) => {
        ctx.status = Number(ctx.params.code)
        ctx.body = { ok: true }
      })
      router.get('/wait', ...limit(), async (ctx) => {
        await spec.wait?.()
        ok(ctx)
      })
      const api = new Router({ prefix: '/api' })
      if (spec.sameMiddlewareTwice && appLimit) api.use(appLimit)
      api.get('/items/:id', ...limit(), ok)
      api.all('/op', ...limit(), ok)
      api.register('/multi', ['GET', 'POST'], [...limit(), ok])
      router.get('/files/:name', ...limit(), ok)
      router.post('/files/upload', ...limit(), ok)
      router.delete('/files/archive', ...limit(), ok)
      const users = new Router({ prefix: '/users/:uid' })
      users.get('/posts', ...limit(), ok)
      app.use(router.routes()).use(router.allowedMethods()).use(api.routes()).use(users.routes())
      return supertestApp(app.callback())
    },
  }
}

function fastifyFlavour(name: string, fastify: typeof Fastify): Flavour {
  return {
    name,
    async build(spec) {
      const app = fastify({ trustProxy: spec.trustProxy ?? false })
      const options = shared<FastifyRequest>(spec, (req) => String((req.query as { t?: unknown }).t))
      await app.register(fastifyRateLimit, { ...options, ...(spec.app && { policy: spec.app }) })
      const stacked = spec.stacked && spec.route !== undefined && spec.route !== false
      if (stacked)
        await app.register(fastifyRateLimit, { ...options, policy: spec.route as Policy, hook: 'preHandler' })
      const config = spec.route === undefined || stacked ? {} : { config: { rateLimit: spec.route } }
      const ok = async (req: FastifyRequest) => answer(spec, req.rateLimit)
      app.get('/users/:id', config, ok)
      app.get('/search', config, ok)
      app.get('/status/:code', config, async (req: FastifyRequest, reply: FastifyReply) => {
        return reply.code(Number((req.params as { code: string }).code)).send({ ok: true })
      })
      app.get('/wait', config, async (req: FastifyRequest) => {
        await spec.wait?.()
        return ok(req)
      })
      app.get('/files/:name', config, ok)
      app.post('/files/upload', config, ok)
      app.delete('/files/archive', config, ok)
      await app.register(
        async (api) => {
          api.get('/items/:id', config, ok)
          api.all('/op', config, ok)
          api.route({ method: ['GET', 'POST'], url: '/multi', ...config, handler: ok })
        },
        { prefix: '/api' },
      )
      await app.register(
        async (users) => {
          users.get('/posts', config, ok)
        },
        { prefix: '/users/:uid' },
      )
      await app.ready()
      return {
        async request(method, path, headers = {}) {
          const res = await app.inject({ method, url: path, headers })
          return { status: res.statusCode, headers: stringHeaders(res.headers), body: res.body }
        },
        async abort(path, entered) {
          if (!app.server.listening) await app.listen({ port: 0, host: '127.0.0.1' })
          await abortRequest((app.server.address() as AddressInfo).port, path, entered)
        },
        close: () => app.close(),
      }
    },
  }
}

function supertestApp(handler: Parameters<typeof request>[0]): TestApp {
  return {
    async request(method, path, headers = {}) {
      const agent = request(handler)[method.toLowerCase() as Lowercase<Method>](path)
      const res = await agent
        .set(headers)
        .buffer(true)
        .parse((response, done) => {
          let text = ''
          response.setEncoding('utf8')
          response.on('data', (chunk: string) => {
            text += chunk
          })
          response.on('end', () => done(null, text))
        })
      return { status: res.status, headers: stringHeaders(res.headers), body: String(res.body ?? '') }
    },
    async abort(path, entered) {
      const server = createServer(handler as RequestListener)
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      try {
        await abortRequest((server.address() as AddressInfo).port, path, entered)
      } finally {
        server.closeAllConnections()
        await new Promise((resolve) => server.close(resolve))
      }
    },
    close: async () => {},
  }
}

/** GET `path` on the port, abandoned (the socket destroyed) once `entered` resolves. */
async function abortRequest(port: number, path: string, entered: Promise<unknown>): Promise<void> {
  const req = httpRequest({ host: '127.0.0.1', port, path, agent: false })
  const closed = new Promise((resolve) => req.once('close', resolve))
  req.on('error', () => {}) // the hang-up this causes
  req.end()
  await entered
  req.destroy()
  await closed
}

function stringHeaders(headers: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), String(value)]))
}

export const flavours: readonly Flavour[] = [
  expressFlavour('express 5', express5),
  expressFlavour('express 4', express4 as typeof express5),
  koaFlavour('koa 3 + @koa/router', Koa3),
  koaFlavour('koa 2 + @koa/router', Koa2 as typeof Koa3),
  fastifyFlavour('fastify 5', Fastify),
]

/**
 * The same, and the lowest version of each framework peer range (aliases in the root package.json): for suites
 * that must hold on every supported version.
 */
export const everyVersion: readonly Flavour[] = [
  ...flavours,
  expressFlavour('express 5.0.0', expressLowest),
  expressFlavour('express 4.21.0', express4Lowest as typeof express5),
  koaFlavour('koa 3.0.0 + @koa/router', KoaLowest),
  koaFlavour('koa 2.15.0 + @koa/router', Koa2Lowest as typeof Koa3),
  // Its types are its own (5.0.0): the same API, typed as the workspace's.
  fastifyFlavour('fastify 5.0.0', FastifyLowest as unknown as typeof Fastify),
]

/** Headers that differ between servers for reasons of their own, not of the limiter. */
export function comparable(exchange: Exchange): Exchange {
  const { date: _date, connection: _connection, 'keep-alive': _keepAlive, ...headers } = exchange.headers
  return { ...exchange, headers }
}
