// The peers' in-process stores, mounted as their users mount them, for the overhead part's in-memory rows:
// express-rate-limit's MemoryStore and @fastify/rate-limit's LocalStore (each middleware's default store),
// koa-ratelimit's memory driver, and rate-limiter-flexible's RateLimiterMemory, which has no middleware of its
// own and runs on every framework as its documentation's middleware does.
import { fastifyRateLimit, type RateLimitPluginOptions } from '@fastify/rate-limit'
import type { RequestHandler } from 'express'
import expressRateLimit from 'express-rate-limit'
import type { FastifyPluginAsync } from 'fastify'
import type { Middleware } from 'koa'
import koaRatelimit from 'koa-ratelimit'
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible'
import type { Framework, Guard } from './servers.js'

export type MemoryPeerId =
  | 'express-rate-limit (memory)'
  | 'rate-limiter-flexible (memory)'
  | '@fastify/rate-limit (memory)'
  | 'koa-ratelimit (memory)'

export interface MemoryPeer {
  readonly id: MemoryPeerId
  /** Its name and major version, with its store: how every table names it. */
  readonly name: string
  readonly frameworks: readonly Framework[]
  /** Keyed by the client IP, each peer's default. */
  createGuard(framework: Framework, options: { limit: number; windowMs: number }): Guard
}

// Its types name the workspace's hoisted fastify, not the pinned one the bench's apps run on.
const fastifyPlugin = fastifyRateLimit as unknown as FastifyPluginAsync<RateLimitPluginOptions>

/** rate-limiter-flexible's documented middleware shape on each framework: a denial is a 429, a store error rethrown. */
function flexibleGuard(framework: Framework, limit: number, windowMs: number): Guard {
  const limiter = new RateLimiterMemory({ points: limit, duration: windowMs / 1000 })
  const denied = (rejection: unknown) => {
    if (rejection instanceof RateLimiterRes) return false
    throw rejection
  }
  const admitted = () => true
  switch (framework) {
    case 'Express': {
      const middleware: RequestHandler = (req, res, next) => {
        limiter
          .consume(req.ip ?? '')
          .then(admitted, denied)
          .then((ok) => {
            if (ok) next()
            else res.status(429).send('Too Many Requests')
          }, next)
      }
      return { framework, middleware }
    }
    case 'Koa': {
      const middleware: Middleware = async (ctx, next) => {
        if (await limiter.consume(ctx.ip).then(admitted, denied)) return next()
        ctx.status = 429
        ctx.body = 'Too Many Requests'
      }
      return { framework, middleware }
    }
    case 'Fastify':
      return {
        framework,
        async register(app) {
          app.addHook('onRequest', async (request, reply) => {
            if (request.url === '/health') return
            if (!(await limiter.consume(request.ip).then(admitted, denied))) {
              return reply.code(429).send('Too Many Requests')
            }
          })
        },
      }
  }
}

export const MEMORY_PEERS: readonly MemoryPeer[] = [
  {
    id: 'express-rate-limit (memory)',
    name: 'express-rate-limit 8 (MemoryStore)',
    frameworks: ['Express'],
    createGuard(_framework, { limit, windowMs }) {
      // The options of its README's example; no store given: its MemoryStore.
      const middleware: RequestHandler = expressRateLimit({
        windowMs,
        limit,
        standardHeaders: 'draft-8',
        legacyHeaders: false,
      })
      return { framework: 'Express', middleware }
    },
  },
  {
    id: 'rate-limiter-flexible (memory)',
    name: 'rate-limiter-flexible 11 (RateLimiterMemory)',
    frameworks: ['Express', 'Fastify', 'Koa'],
    createGuard: (framework, { limit, windowMs }) => flexibleGuard(framework, limit, windowMs),
  },
  {
    id: '@fastify/rate-limit (memory)',
    name: '@fastify/rate-limit 11 (LocalStore)',
    frameworks: ['Fastify'],
    createGuard(_framework, { limit, windowMs }) {
      return {
        framework: 'Fastify',
        async register(app) {
          // No redis given: its LocalStore.
          await app.register(fastifyPlugin, { max: limit, timeWindow: windowMs })
        },
      }
    },
  },
  {
    id: 'koa-ratelimit (memory)',
    name: 'koa-ratelimit 6 (memory driver)',
    frameworks: ['Koa'],
    createGuard(_framework, { limit, windowMs }) {
      const middleware = koaRatelimit({ driver: 'memory', db: new Map(), duration: windowMs, max: limit })
      return { framework: 'Koa', middleware }
    },
  },
]
