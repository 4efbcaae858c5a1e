import {
  createHttpLimiter,
  type HttpLimiter,
  type HttpRateLimitOptions,
  hasLimitSource,
  type Policy,
  type PolicyOptions,
  type RequestInfo,
  withoutLimitSource,
} from '@fleetlimit/core'
import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'

/** A route's `config.rateLimit`: its own policy (or policies) instead of the plugin's, or false for none. */
export type RouteRateLimit = Policy | PolicyOptions | readonly (Policy | PolicyOptions)[] | false

declare module 'fastify' {
  interface FastifyContextConfig {
    rateLimit?: RouteRateLimit
  }
}

/** The plugin's options; without a limit, only routes with `config.rateLimit` are limited. */
export type FastifyRateLimitOptions = HttpRateLimitOptions<FastifyRequest>

const FASTIFY = { name: 'Fastify', trustProxyHint: 'Pass trustProxy to fastify() for your proxy hops or addresses' }

/** `perRoute`: the route has its own policy, so its pattern keys it; the plugin's policy counts across routes. */
function describe(request: FastifyRequest, perRoute: boolean): RequestInfo {
  return {
    ip: request.ip,
    method: request.method,
    routePattern: perRoute ? request.routeOptions.url : undefined,
    // request.ips is only set when trustProxy is on.
    untrustedForwardedFor: request.headers['x-forwarded-for'] !== undefined && request.ips === undefined,
  }
}

const plugin: FastifyPluginAsync<FastifyRateLimitOptions> = async (fastify, options) => {
  const global = hasLimitSource(options) ? createHttpLimiter<FastifyRequest>(options, FASTIFY) : undefined
  // Route policies share the plugin's other options (store, headers, tenant, …), built once per policy object.
  const shared = withoutLimitSource(options)
  const perRoute = new Map<RouteRateLimit, HttpLimiter<FastifyRequest>>()

  fastify.addHook('onRoute', (route) => {
    const config = route.config?.rateLimit
    if (config === undefined || config === false || perRoute.has(config)) return
    const policy = Array.isArray(config) ? { policies: config } : { policy: config as Policy | PolicyOptions }
    perRoute.set(config, createHttpLimiter<FastifyRequest>({ ...shared, ...policy }, FASTIFY))
  })

  fastify.addHook('onRequest', async (request, reply) => {
    const config = request.routeOptions.config.rateLimit
    if (config === false) return
    const http = config === undefined ? global : perRoute.get(config)
    if (!http) return
    const outcome = await http.handle(request, describe(request, config !== undefined))
    reply.headers(outcome.headers)
    // A Buffer, so Fastify adds no charset to the content type: the same bytes as the other adapters.
    if (outcome.action === 'respond') return reply.code(outcome.status).send(Buffer.from(outcome.body))
  })
}

/** Fastify plugin: `await app.register(rateLimit, { store, limit: 100, window: '1m' })`. */
export const rateLimit = fp(plugin, { fastify: '5.x', name: '@fleetlimit/fastify' })
