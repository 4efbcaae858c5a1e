// The popular Redis rate limiters the bench sets fleetlimit beside, each wired once: its label, its algorithm,
// the store call behind each of its decisions (which the decisions and memory parts make directly), and its
// middleware as its users mount it (which the accuracy and overhead parts serve). Each runs on the ioredis
// client it is given, as its documentation sets one up.
import { createRequire } from 'node:module'
import { fastifyRateLimit, type RateLimitPluginOptions } from '@fastify/rate-limit'
import type { RequestHandler } from 'express'
import expressRateLimit, { type Options as ExpressRateLimitOptions } from 'express-rate-limit'
import type { FastifyPluginAsync } from 'fastify'
import type { Redis } from 'ioredis'
import koaRatelimit from 'koa-ratelimit'
import { type RedisReply, RedisStore } from 'rate-limit-redis'
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible'
import type { Framework, Guard, KeyOf } from './servers.js'

export type PeerId = 'express-rate-limit' | 'rate-limiter-flexible' | '@fastify/rate-limit' | 'koa-ratelimit'

export interface PeerOptions {
  readonly limit: number
  readonly windowMs: number
  /** Prepended to every key, so that limiters sharing one Redis never share a key; the peer's own default if absent. */
  readonly prefix?: string
}

export interface GuardOptions extends PeerOptions {
  /** The peer's own default (the client IP) if absent. */
  readonly key?: KeyOf
}

/** One decision on a key, made by the store call the peer's middleware makes: true when admitted. */
export type Decide = (key: string) => Promise<boolean>

export interface Peer {
  /** Its npm package: the `limiter` of each of its rows in every part's data. */
  readonly id: PeerId
  /** Its name and major version, with its Redis store: how every table names it. */
  readonly name: string
  readonly algorithm: string
  /** What createDecide calls. */
  readonly call: string
  readonly framework: Framework
  createDecide(client: Redis, options: PeerOptions): Promise<Decide>
  createGuard(client: Redis, options: GuardOptions): Promise<Guard>
}

function expressStore(client: Redis, { prefix }: PeerOptions): RedisStore {
  return new RedisStore({
    ...(prefix !== undefined && { prefix }),
    sendCommand: (command: string, ...args: string[]) => client.call(command, ...args) as Promise<RedisReply>,
  })
}

/** Resolves false when rate-limiter-flexible rejects with a RateLimiterRes (a denial); rethrows a store error. */
async function flexibleDecide(client: Redis, { limit, windowMs, prefix }: PeerOptions): Promise<Decide> {
  const limiter = new RateLimiterRedis({
    storeClient: client,
    points: limit,
    duration: windowMs / 1000,
    ...(prefix !== undefined && { keyPrefix: prefix }),
  })
  return (key) =>
    limiter.consume(key).then(
      () => true,
      (rejection: unknown) => {
        if (rejection instanceof RateLimiterRes) return false
        throw rejection
      },
    )
}

// Not in their packages' exports or types, but plain files of them: the Redis stores the middlewares use.
const require = createRequire(import.meta.url)
type FastifyRedisStore = new (
  continueExceeding: boolean,
  exponentialBackoff: boolean,
  redis: Redis,
  nameSpace?: string,
) => {
  incr(
    key: string,
    cb: (error: Error | null, result: { current: number; ttl: number } | null) => void,
    timeWindow: number,
    max: number,
  ): void
}
type AsyncRatelimiter = new (options: {
  id: string
  db: Redis
  max: number
  duration: number
  namespace?: string
}) => {
  get(): Promise<{ remaining: number; reset: number; total: number }>
}

// Its types name the workspace's hoisted fastify, not the pinned one the bench's apps run on.
const fastifyPlugin = fastifyRateLimit as unknown as FastifyPluginAsync<RateLimitPluginOptions>
// @types/koa-ratelimit types `db` as an ioredis 4 client (@types/ioredis); the package takes any ioredis.
type KoaRatelimitDb = koaRatelimit.MiddlewareOptions['db']

// A store error reaches the framework's error handler (a 500), as each peer's middleware does by default.
export const PEERS: readonly Peer[] = [
  {
    id: 'express-rate-limit',
    name: 'express-rate-limit 8 + rate-limit-redis 6',
    algorithm: 'fixed window from the first hit (a counter: PTTL, SET PX or INCR)',
    call: 'RedisStore.increment',
    framework: 'Express',
    async createDecide(client, options) {
      const store = expressStore(client, options)
      await store.init({ windowMs: options.windowMs } as ExpressRateLimitOptions)
      return async (key) => (await store.increment(key)).totalHits <= options.limit
    },
    async createGuard(client, { key, ...options }) {
      const { limit, windowMs } = options
      // The options of its README's example.
      const middleware: RequestHandler = expressRateLimit({
        windowMs,
        limit,
        standardHeaders: 'draft-8',
        legacyHeaders: false,
        store: expressStore(client, options),
        ...(key && { keyGenerator: (req) => key(req.headers) }),
      })
      return { framework: 'Express', middleware }
    },
  },
  {
    id: 'rate-limiter-flexible',
    name: 'rate-limiter-flexible 11 (RateLimiterRedis)',
    algorithm: 'fixed window from the first hit (a counter: SET NX EX + INCRBY)',
    call: 'RateLimiterRedis.consume',
    framework: 'Express',
    createDecide: flexibleDecide,
    async createGuard(client, { key, ...options }) {
      // No middleware of its own: its documentation's Express one, which tells a store error from a denial.
      const decide = await flexibleDecide(client, options)
      const middleware: RequestHandler = (req, res, next) => {
        decide(key ? key(req.headers) : (req.ip ?? '')).then((admitted) => {
          if (admitted) next()
          else res.status(429).send('Too Many Requests')
        }, next)
      }
      return { framework: 'Express', middleware }
    },
  },
  {
    id: '@fastify/rate-limit',
    name: '@fastify/rate-limit 11 (redis)',
    algorithm: 'fixed window from the first hit (a counter: INCR + PEXPIRE)',
    call: 'RedisStore.incr',
    framework: 'Fastify',
    async createDecide(client, { limit, windowMs, prefix }) {
      const Store = require('@fastify/rate-limit/store/RedisStore.js') as FastifyRedisStore
      // The plugin's defaults: no continueExceeding, no exponentialBackoff, its own namespace unless given one.
      const store = new Store(false, false, client, prefix)
      return (key) =>
        new Promise<boolean>((resolve, reject) =>
          store.incr(
            key,
            (error, result) => (error ? reject(error) : resolve((result?.current ?? 0) <= limit)),
            windowMs,
            limit,
          ),
        )
    },
    async createGuard(client, { limit, windowMs, prefix, key }) {
      return {
        framework: 'Fastify',
        async register(app) {
          await app.register(fastifyPlugin, {
            redis: client,
            max: limit,
            timeWindow: windowMs,
            ...(prefix !== undefined && { nameSpace: prefix }),
            ...(key && { keyGenerator: (request) => key(request.headers) }),
          })
        },
      }
    },
  },
  {
    id: 'koa-ratelimit',
    name: 'koa-ratelimit 6 (async-ratelimiter)',
    algorithm: 'sliding log on the app’s clock (a ZSET, one member per request)',
    call: 'Limiter.get',
    framework: 'Koa',
    async createDecide(client, { limit, windowMs, prefix }) {
      const Limiter = require('koa-ratelimit/limiter/redis.js') as AsyncRatelimiter
      // koa-ratelimit builds one of these per request and admits while `remaining` is above 0.
      return async (key) => {
        const limiter = new Limiter({
          id: key,
          db: client,
          max: limit,
          duration: windowMs,
          ...(prefix !== undefined && { namespace: prefix }),
        })
        return (await limiter.get()).remaining > 0
      }
    },
    async createGuard(client, { limit, windowMs, prefix, key }) {
      const middleware = koaRatelimit({
        driver: 'redis',
        db: client as unknown as KoaRatelimitDb,
        duration: windowMs,
        max: limit,
        ...(prefix !== undefined && { namespace: prefix }),
        ...(key && { id: (ctx) => key(ctx.headers) }),
      })
      return { framework: 'Koa', middleware }
    },
  },
]

/** How the tables name a row's limiter: a peer by its label, fleetlimit's configurations as they are. */
export function limiterName(limiter: string): string {
  return PEERS.find((peer) => peer.id === limiter)?.name ?? limiter
}
