import type { Decision } from '@fleetlimit/core'
import {
  createHttpLimiter,
  factoryMisuse,
  type HttpRateLimitOptions,
  manyMethods,
  onResponseEnd,
  type RequestInfo,
  stackHeaders,
} from '@fleetlimit/core/http'
import type { Context, Middleware } from 'koa'

/** What the middleware puts in `ctx.state`: for apps that type their state themselves (`Koa<MyState & KoaRateLimitState>`). */
export interface KoaRateLimitState {
  /** The limiter's decision on this request (with several policies, each in `policies`); unset when none was made. */
  rateLimit?: Decision
}

declare module 'koa' {
  interface DefaultState extends KoaRateLimitState {}
}

/** Koa's options; `requestWasSuccessful` is called with `(ctx, ctx)`. */
export type KoaRateLimitOptions = HttpRateLimitOptions<Context, Context>

const KOA = {
  name: 'Koa',
  trustProxyHint: 'Set app.proxy = true and app.maxIpsCount to the number of proxies in front of the app',
  trustAllHint: 'Set app.maxIpsCount to the number of proxies in front of the app',
}

interface RouterLayer {
  readonly path: unknown
  readonly methods: readonly unknown[]
  readonly stack?: unknown
}

/**
 * The @koa/router route this middleware runs for: the layer matching the path and the method whose own
 * middleware it is (`router.get(path, rateLimit(…), handler)`), else the last layer matching both (mounted with
 * `router.use`, or after the router). `ctx.matched` lists every layer matching the path, whatever its method.
 */
function matchedRoute(ctx: Context, middleware: Middleware): RouterLayer | undefined {
  const layers = (ctx as { matched?: readonly RouterLayer[] }).matched ?? []
  let last: RouterLayer | undefined
  for (const layer of layers) {
    if (typeof layer.path !== 'string' || !layer.methods.includes(ctx.method)) continue
    if (Array.isArray(layer.stack) && layer.stack.includes(middleware)) return layer
    last = layer
  }
  return last
}

function describe(ctx: Context, middleware: Middleware): RequestInfo {
  const peerAddress = ctx.req.socket.remoteAddress
  const route = matchedRoute(ctx, middleware)
  return {
    ip: ctx.ip || peerAddress,
    method: ctx.method,
    routePattern: route?.path as string | undefined,
    manyMethods: route !== undefined && manyMethods(route.methods as string[]),
    forwardedFor: ctx.get(ctx.app.proxyIpHeader || 'x-forwarded-for') !== '',
    // Without maxIpsCount, Koa takes the first X-Forwarded-For entry: whatever the client wrote there.
    trustProxy: !ctx.app.proxy ? 'none' : ctx.app.maxIpsCount > 0 ? 'some' : 'all',
    peerAddress,
  }
}

/** A Koa context where options belong: its own `app`, `req` and `res`, which no options object has. */
function isContext(value: unknown): value is Context {
  if (typeof value !== 'object' || value === null) return false
  const { app, req, res } = value as Partial<Context>
  return typeof app === 'object' && typeof req === 'object' && typeof res === 'object'
}

/**
 * Koa middleware, app-wide or on a @koa/router route.
 *
 * @example
 * ```ts
 * app.use(rateLimit({ store: redisStore(redis), limit: 100, window: '1m' }))
 * router.get('/search', rateLimit({ store, policy: searchPolicy }), handler)
 * ```
 */
export function rateLimit(options: KoaRateLimitOptions): Middleware {
  // `app.use(rateLimit)` without the call: Koa calls the factory itself, with (ctx, next), per request.
  if (isContext(options)) {
    const { status, headers, body } = factoryMisuse(options.app)
    options.set(headers)
    options.status = status
    options.body = body
    return async () => {}
  }
  const http = createHttpLimiter<Context, Context>(options, KOA)
  const middleware: Middleware = async (ctx, next) => {
    const outcome = await http.handle(ctx, describe(ctx, middleware))
    // Stacked limiters (app-wide, then per route): the last one to decide sets it.
    if (outcome.decision) ctx.state.rateLimit = outcome.decision
    // A response another middleware has sent meanwhile (a request timeout) is left alone.
    const sent = ctx.headerSent
    // Another limiter's headers already on the response are kept: every policy that applied is listed.
    if (!sent) ctx.set(stackHeaders(outcome.headers, (name) => ctx.response.get(name)))
    if (outcome.action === 'next') {
      const { decision } = outcome
      if (http.settles && decision?.allowed) {
        onResponseEnd(ctx.res, (finished, status) => void http.settle(ctx, ctx, decision, finished, status))
      }
      return next()
    }
    if (sent) return
    ctx.status = outcome.status
    ctx.body = outcome.body
  }
  return middleware
}
