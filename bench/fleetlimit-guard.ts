// fleetlimit in front of each framework's handler through its own adapter, as peers.ts mounts the peers.
import type { RateLimiter } from '@fleetlimit/core'
import { rateLimit as fleetExpress } from '@fleetlimit/express'
import { type FastifyRateLimitOptions, rateLimit as fleetFastify } from '@fleetlimit/fastify'
import { rateLimit as fleetKoa } from '@fleetlimit/koa'
import type { FastifyPluginAsync } from 'fastify'
import type { Framework, Guard, KeyOf } from './servers.js'

// Typed against the workspace's fastify; the bench's apps run on its pinned copy.
const fastifyPlugin = fleetFastify as unknown as FastifyPluginAsync<FastifyRateLimitOptions>

/** `key` becomes the adapter's `tenant`; without it, the adapter's default (the client IP). */
export function fleetlimitGuard(framework: Framework, limiter: RateLimiter, key?: KeyOf): Guard {
  switch (framework) {
    case 'Express':
      return {
        framework,
        middleware: fleetExpress({ limiter, ...(key && { tenant: (req) => key(req.headers) }) }),
      }
    case 'Fastify':
      return {
        framework,
        async register(app) {
          await app.register(fastifyPlugin, { limiter, ...(key && { tenant: (request) => key(request.headers) }) })
        },
      }
    case 'Koa':
      return { framework, middleware: fleetKoa({ limiter, ...(key && { tenant: (ctx) => key(ctx.headers) }) }) }
  }
}
