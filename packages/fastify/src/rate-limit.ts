import { type Decision, type Duration, OptionError, type Policy, type PolicyOptions } from '@fleetlimit/core'
import {
  checkHttpOptions,
  createHttpLimiter,
  type HttpLimiter,
  type HttpRateLimitOptions,
  manyMethods,
  onResponseEnd,
  type RequestInfo,
  stackHeaders,
} from '@fleetlimit/core/http'
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { hasLimitSource, withoutLimitSource } from './limit-source.js'

/**
 * A route's own policy written inline: a rate (its limit and window required) or an in-flight limit (its
 * concurrency). Fastify infers a route's config type from the literal, which would take any object with a known
 * option, or a string; required options make a misspelled or missing one fail to compile. A misspelled optional
 * one is refused when the route is declared (or at compile time, in definePolicy).
 */
export type RoutePolicyOptions =
  | (PolicyOptions & { limit: number; window: Duration })
  | (PolicyOptions & { concurrency: number })

/** A route's `config.rateLimit`: its own policy (or policies) instead of the plugin's, or false for none. */
export type RouteRateLimit = Policy | RoutePolicyOptions | readonly (Policy | RoutePolicyOptions)[] | false

declare module 'fastify' {
  interface FastifyContextConfig {
    rateLimit?: RouteRateLimit
  }
  interface FastifyRequest {
    /** The limiter's decision on this request (with several policies, each in `policies`); unset when none was made. */
    rateLimit?: Decision
  }
}

type RouteOptions = FastifyRequest['routeOptions']

/** The request hook the plugin limits in. */
export type RateLimitHook = 'onRequest' | 'preValidation' | 'preHandler'

const HOOKS: readonly RateLimitHook[] = ['onRequest', 'preValidation', 'preHandler']

/** The plugin's options; without a limit, only routes with `config.rateLimit` are limited. */
export interface FastifyRateLimitOptions extends HttpRateLimitOptions<FastifyRequest, FastifyReply> {
  /**
   * Where requests are limited. Default 'onRequest': before the body is read. 'preValidation' or 'preHandler'
   * run after hooks registered before the plugin in that stage or earlier (an auth hook setting `request.user`
   * for `tenant`), and after the body is read and parsed.
   */
  hook?: RateLimitHook
}

const FASTIFY = {
  name: 'Fastify',
  // Recent Fastify 5 releases ignore a hop count (trustProxy: 1 trusts no one), so the hints name addresses.
  trustProxyHint:
    "Pass trustProxy to fastify() with your proxies' addresses or CIDR ranges ('10.0.0.1', ['10.0.0.0/8']) " +
    'or a function of (address, hop): recent Fastify 5 releases ignore a hop count such as trustProxy: 1',
  trustAllHint:
    "Pass trustProxy your proxies' addresses or CIDR ranges ('10.0.0.1', ['10.0.0.0/8']) or a function of " +
    '(address, hop), not true',
}

/** The documentation addresses of a made-up chain of proxies that no real trustProxy setting lists. */
const PROBE_HOPS = Array.from({ length: 31 }, (_, i) => `198.51.100.${i + 1}`)
const PROBE = { socket: { remoteAddress: '203.0.113.1' }, headers: { 'x-forwarded-for': PROBE_HOPS.join(', ') } }

/**
 * Whether trustProxy trusts any peer (`true`, or a function that does): Fastify does not expose the setting, so
 * its own `ips` getter is asked about the made-up chain. Trusting all of it means trusting every peer.
 */
function trustsAnyPeer(request: FastifyRequest): boolean {
  try {
    const ips: unknown = Reflect.get(request, 'ips', { raw: PROBE })
    return Array.isArray(ips) && ips.length === PROBE_HOPS.length + 1
  } catch {
    return false // another Fastify's getter: no warning rather than a failed request
  }
}

const NOTHING_LIMITED =
  'the rateLimit plugin was registered with no limit of its own and no route declared after it has a ' +
  'config.rateLimit, so it limits no request. Pass it a limit to limit every route ' +
  "(app.register(rateLimit, { limit: 100, window: '1m' }), or policy, policies or limiter), or give the routes to " +
  'limit their own: { config: { rateLimit: policy } }.'

const MISUSE =
  "rateLimit is a Fastify plugin, not a factory: register it with its options, app.register(rateLimit, { limit: 100, window: '1m' })"

/**
 * `app.register(rateLimit())` or `app.register(rateLimit({ … }))`: called by hand, the plugin gets no Fastify
 * instance; said where the call is, before it is registered.
 */
const plugin: FastifyPluginAsync<FastifyRateLimitOptions> = (fastify, options) => {
  const instance = fastify as Partial<FastifyInstance> | undefined
  if (typeof instance?.addHook !== 'function' || typeof instance.register !== 'function') {
    throw new OptionError('rateLimit', fastify, MISUSE, 'misuse')
  }
  return setUp(fastify, options ?? {})
}

async function setUp(fastify: FastifyInstance, { hook = 'onRequest', ...options }: FastifyRateLimitOptions) {
  if (!HOOKS.includes(hook)) {
    throw new OptionError('hook', hook, `one of ${HOOKS.map((h) => JSON.stringify(h)).join(', ')}`)
  }
  // Names and function-valued options are checked now, even with no policy of the plugin's own.
  checkHttpOptions(options)
  // One set of one-time warnings for the plugin's own policy and every route's.
  const warned = new Set<string>()
  const global = hasLimitSource(options)
    ? createHttpLimiter<FastifyRequest, FastifyReply>(options, FASTIFY, warned)
    : undefined
  // Route policies share the plugin's other options (store, headers, tenant, …), built once per policy object.
  const shared = withoutLimitSource(options)
  const perRoute = new Map<RouteRateLimit, HttpLimiter<FastifyRequest, FastifyReply>>()
  let trustsAll: boolean | undefined

  function routeLimiter(config: Exclude<RouteRateLimit, false>) {
    let http = perRoute.get(config)
    if (!http) {
      const policy = Array.isArray(config) ? { policies: config } : { policy: config as Policy | RoutePolicyOptions }
      http = createHttpLimiter<FastifyRequest, FastifyReply>({ ...shared, ...policy }, FASTIFY, warned)
      perRoute.set(config, http)
    }
    return http
  }

  // Routes of several methods with their own policy, by URL: Fastify serves HEAD for one that takes GET by a HEAD
  // route of its own, which is still the same route definition.
  const severalMethods = new Set<string>()

  /** Whether the matched route takes several methods: `app.all`, or `method: ['GET', 'POST']` in `app.route`. */
  function routeTakesManyMethods({ method, url }: RouteOptions): boolean {
    if (Array.isArray(method)) return manyMethods(method)
    return method === 'HEAD' && url !== undefined && severalMethods.has(url)
  }

  /** `perRoute`: the route has its own policy, so its pattern keys it; the plugin's policy counts across routes. */
  function describe(request: FastifyRequest, route: RouteOptions, perRoute: boolean): RequestInfo {
    const peerAddress = request.socket.remoteAddress
    // request.ips is only defined when trustProxy is on (a getter that parses X-Forwarded-For, so not called here);
    // the setting is the same for every request.
    const trusted = 'ips' in request
    if (trusted && trustsAll === undefined) trustsAll = trustsAnyPeer(request)
    return {
      ip: request.ip,
      method: request.method,
      routePattern: perRoute ? route.url : undefined,
      manyMethods: perRoute && routeTakesManyMethods(route),
      forwardedFor: request.headers['x-forwarded-for'] !== undefined,
      trustProxy: !trusted ? 'none' : trustsAll ? 'all' : 'some',
      peerAddress,
    }
  }

  // Validates a route's policy when it is declared; routes declared before the plugin loaded (its onRoute hook
  // missed them, yet its onRequest hook applies to them) get their limiter on their first request instead.
  fastify.addHook('onRoute', (route) => {
    const config = route.config?.rateLimit
    if (config === undefined || config === false) return
    routeLimiter(config)
    if (Array.isArray(route.method) && manyMethods(route.method)) severalMethods.add(route.url)
  })
  if (!global) {
    // Registered without a policy and no route of its own: most likely `app.register(rateLimit)`, options forgotten.
    fastify.addHook('onReady', async () => {
      if (perRoute.size === 0) (options.logger ?? console).warn(`fleetlimit: ${NOTHING_LIMITED}`)
    })
  }

  // Declared, so that every request has the same shape; a second registration of the plugin shares it.
  if (!fastify.hasRequestDecorator('rateLimit')) fastify.decorateRequest('rateLimit', undefined)

  async function limit(request: FastifyRequest, reply: FastifyReply) {
    // A getter that builds a new object on each read: read once.
    const route = request.routeOptions
    const config = route.config.rateLimit
    if (config === false) return
    const http = config === undefined ? global : routeLimiter(config)
    if (!http) return
    const outcome = await http.handle(request, describe(request, route, config !== undefined))
    // Stacked registrations (say one per IP onRequest, one per user preHandler): the last one to decide sets it.
    if (outcome.decision) request.rateLimit = outcome.decision
    // A reply another hook has sent meanwhile (a request timeout) is left alone; Fastify goes no further with it.
    const sent = reply.sent || reply.raw.headersSent
    if (!sent) {
      // Another registration's headers already on the reply are kept: every policy that applied is listed.
      reply.headers(stackHeaders(outcome.headers, (name) => reply.getHeader(name)))
      // A Buffer, so Fastify adds no charset to the content type: the same bytes as the other adapters.
      if (outcome.action === 'respond') return reply.code(outcome.status).send(Buffer.from(outcome.body))
    }
    const { decision } = outcome
    // On the raw response rather than in onResponse: it also tells a client that went away before the reply.
    if (http.settles && decision?.allowed) {
      onResponseEnd(reply.raw, (finished, status) => void http.settle(request, reply, decision, finished, status))
    }
  }
  fastify.addHook(hook, limit)
}

/**
 * Fastify plugin: limits every route of the context it is registered in; a route's `config.rateLimit` sets its
 * own policy, or `false` for none.
 *
 * @example
 * ```ts
 * await app.register(rateLimit, { store: redisStore(redis), limit: 100, window: '1m' })
 * app.get('/search', { config: { rateLimit: searchPolicy } }, handler)
 * ```
 */
export const rateLimit = fp(plugin, { fastify: '5.x', name: '@fleetlimit/fastify' })
