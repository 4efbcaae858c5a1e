// One HTTP server per limiter under test, each the way its users run it: the peers through their own
// framework middleware on an ioredis client, fleetlimit through @fleetlimit/express. `GET /` is limited
// (one shared key) and `GET /health` is not, so a client can open its connections before a run.
import { createServer, type RequestListener } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fastifyRateLimit, type RateLimitPluginOptions } from '@fastify/rate-limit'
import { createRateLimiter, type LocalOptions, type RateLimiter, redisStore } from '@fleetlimit/core'
import { rateLimit as fleetlimit } from '@fleetlimit/express'
import express, { type RequestHandler } from 'express'
import expressRateLimit from 'express-rate-limit'
import Fastify, { type FastifyPluginAsync } from 'fastify'
import { Redis } from 'ioredis'
import Koa from 'koa'
import koaRatelimit from 'koa-ratelimit'
import { type RedisReply, RedisStore } from 'rate-limit-redis'
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible'
import { recordingStore } from '../examples/demo/recording-store.js'

export interface LimiterInfo {
  readonly id: string
  readonly name: string
  readonly algorithm: string
  /** What the admission times of this limiter's rows are. */
  readonly basis: string
}

const HANDLER = 'handler ran (server process clock)'
const DECISION = 'store decision (Redis clock); lease admissions: process clock'

export const LIMITERS = [
  {
    id: 'express-rate-limit',
    name: 'express-rate-limit 8 + rate-limit-redis 6',
    algorithm: 'fixed window from the first hit (PTTL, SET PX / INCR)',
    basis: HANDLER,
  },
  {
    id: 'rate-limiter-flexible',
    name: 'rate-limiter-flexible 11 RateLimiterRedis (Express)',
    algorithm: 'fixed window from the first hit (SET NX EX + INCRBY)',
    basis: HANDLER,
  },
  {
    id: 'fastify-rate-limit',
    name: '@fastify/rate-limit 11 (redis)',
    algorithm: 'fixed window from the first hit (INCR + PEXPIRE)',
    basis: HANDLER,
  },
  {
    id: 'koa-ratelimit',
    name: 'koa-ratelimit 6 (redis)',
    algorithm: 'sliding log on the app’s clock (async-ratelimiter: ZSET + ZCARD)',
    basis: HANDLER,
  },
  {
    id: 'fleetlimit-store',
    name: 'fleetlimit, local: false',
    algorithm: 'sliding log (server clock)',
    basis: DECISION,
  },
  {
    id: 'fleetlimit-deny-cache',
    name: 'fleetlimit, deny cache (default)',
    algorithm: 'sliding log (server clock)',
    basis: DECISION,
  },
  {
    id: 'fleetlimit-lease',
    name: "fleetlimit, lease: 'auto'",
    algorithm: 'sliding log (server clock) + leases',
    basis: DECISION,
  },
  {
    id: 'fleetlimit-bucketed',
    name: "fleetlimit, algorithm: 'bucketed'",
    algorithm: 'bucketed, 60 buckets (server clock)',
    basis: DECISION,
  },
] as const satisfies readonly LimiterInfo[]

export type LimiterId = (typeof LIMITERS)[number]['id']

export interface LimitedServer {
  readonly port: number
  /** Times (epoch ms) of every admission on the row's basis: store decisions for fleetlimit, else the handler's. */
  readonly admissions: number[]
  /** Times (epoch ms) at which the handler behind the limiter ran. */
  readonly handlerTimes: number[]
  /** Forgets the times noted so far (a warm-up's). */
  forget(): void
  close(): Promise<void>
}

export interface ServerOptions {
  readonly redisUrl: string
  readonly limit: number
  readonly windowMs: number
}

/** The wall clock, which on one machine is the clock Redis's TIME reads. */
export const wallNow = () => performance.timeOrigin + performance.now()

/** The key every limiter counts under: the request's `x-key` header, so a warm-up can use another one. */
const keyOf = (headers: Record<string, string | string[] | undefined>) => String(headers['x-key'] ?? 'bench')

export async function startLimitedServer(id: LimiterId, options: ServerOptions): Promise<LimitedServer> {
  const redis = new Redis(options.redisUrl)
  const handlerTimes: number[] = []
  let admissions = handlerTimes
  const { limit, windowMs } = options
  const ok = () => {
    handlerTimes.push(wallNow())
    return 'ok'
  }
  let listen: () => Promise<{ port: number; close: () => Promise<void> }>

  if (id === 'fastify-rate-limit') {
    const app = Fastify()
    // Its types name the workspace's hoisted fastify, not the pinned one this server runs on.
    const plugin = fastifyRateLimit as unknown as FastifyPluginAsync<RateLimitPluginOptions>
    await app.register(plugin, { redis, max: limit, timeWindow: windowMs, keyGenerator: (req) => keyOf(req.headers) })
    app.get('/health', { config: { rateLimit: false } }, async () => 'ok')
    app.get('/', async () => ok())
    listen = async () => {
      await app.listen({ host: '127.0.0.1', port: 0 })
      return { port: (app.server.address() as AddressInfo).port, close: () => app.close() }
    }
  } else if (id === 'koa-ratelimit') {
    const app = new Koa()
    // @types/koa-ratelimit types `db` as an ioredis 4 client (@types/ioredis); the package takes any ioredis.
    const db = redis as unknown as koaRatelimit.MiddlewareOptions['db']
    const limited = koaRatelimit({
      driver: 'redis',
      db,
      duration: windowMs,
      max: limit,
      id: (ctx) => keyOf(ctx.headers),
    })
    app.use(async (ctx, next) => {
      if (ctx.path === '/health') ctx.body = 'ok'
      else await limited(ctx, next)
    })
    app.use((ctx) => {
      ctx.body = ok()
    })
    listen = () => listenOn(app.callback())
  } else {
    const app = express()
    let middleware: RequestHandler
    if (id === 'express-rate-limit') {
      const store = new RedisStore({
        sendCommand: (command: string, ...args: string[]) => redis.call(command, ...args) as Promise<RedisReply>,
      })
      middleware = expressRateLimit({ windowMs, limit, keyGenerator: (req) => keyOf(req.headers), store })
    } else if (id === 'rate-limiter-flexible') {
      // It has no middleware of its own: this is the one its README shows.
      const limiter = new RateLimiterRedis({ storeClient: redis, points: limit, duration: windowMs / 1000 })
      middleware = (req, res, next) => {
        limiter.consume(keyOf(req.headers)).then(
          () => next(),
          (rejection: unknown) => {
            if (rejection instanceof RateLimiterRes) res.status(429).send('Too Many Requests')
            else next(rejection)
          },
        )
      }
    } else {
      const recording = ours(id, redis, options)
      admissions = recording.admissions
      middleware = fleetlimit({ limiter: recording.limiter, tenant: (req) => keyOf(req.headers) })
    }
    app.get('/health', (_req, res) => {
      res.send('ok')
    })
    app.get('/', middleware, (_req, res) => {
      res.send(ok())
    })
    listen = () => listenOn(app)
  }

  const server = await listen()
  return {
    port: server.port,
    admissions,
    handlerTimes,
    forget() {
      admissions.length = 0
      handlerTimes.length = 0
    },
    async close() {
      await server.close()
      redis.disconnect()
    },
  }
}

/** A fleetlimit limiter whose every admission is noted: on the store's clock, or this process's for a lease's. */
function ours(id: LimiterId, redis: Redis, { limit, windowMs }: ServerOptions) {
  const recording = recordingStore(redisStore(redis))
  const local: LocalOptions | false | undefined =
    id === 'fleetlimit-store' ? false : id === 'fleetlimit-lease' ? { lease: 'auto' } : undefined
  const limiter = createRateLimiter({
    store: recording.store,
    limit,
    window: windowMs,
    ...(local !== undefined && { local }),
    ...(id === 'fleetlimit-bucketed' && { algorithm: 'bucketed' as const }),
  })
  const noting = new Proxy(limiter, {
    get(target, property, receiver) {
      if (property !== 'consume') return Reflect.get(target, property, receiver)
      const consume: RateLimiter['consume'] = async (key, consumeOptions) => {
        const decision = await target.consume(key, consumeOptions)
        if (decision.allowed && decision.source === 'local') recording.admissions.push(wallNow())
        return decision
      }
      return consume
    },
  })
  return { limiter: noting, admissions: recording.admissions }
}

async function listenOn(handler: RequestListener) {
  const server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
