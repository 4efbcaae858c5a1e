import { IncomingMessage } from 'node:http'
import type { Decision } from '@fleetlimit/core'
import {
  createHttpLimiter,
  factoryMisuse,
  type HttpOutcome,
  type HttpRateLimitOptions,
  manyMethods,
  onResponseEnd,
  type RequestInfo,
  stackHeaders,
} from '@fleetlimit/core/http'
import type { NextFunction, Request, RequestHandler, Response } from 'express'
import { createRoutePatterns } from './route-pattern.js'

declare global {
  namespace Express {
    interface Request {
      /** The limiter's decision on this request (with several policies, each in `policies`); unset when none was made. */
      rateLimit?: Decision
    }
  }
}

export type ExpressRateLimitOptions = HttpRateLimitOptions<Request, Response>

const EXPRESS = {
  name: 'Express',
  trustProxyHint: "Set app.set('trust proxy', …) to your proxy hops or addresses",
  trustAllHint:
    "Set app.set('trust proxy', …) to the number of proxies in front of the app or to their addresses, not true",
}

/** Whether the matched route takes several methods: `app.all` (`_all` in the route's methods), `app.route(p).get(…).post(…)`. */
function routeTakesManyMethods(req: Request): boolean {
  const methods = (req.route as { methods?: Record<string, unknown> } | undefined)?.methods
  if (typeof methods !== 'object' || methods === null) return false
  return methods._all === true || manyMethods(Object.keys(methods))
}

/**
 * Express middleware, app-wide or per route.
 *
 * @example
 * ```ts
 * app.use(rateLimit({ store: redisStore(redis), limit: 100, window: '1m' }))
 * app.get('/search', rateLimit({ store, policy: searchPolicy }), handler)
 * ```
 */
export function rateLimit(options: ExpressRateLimitOptions): RequestHandler {
  // `app.use(rateLimit)` without the call: Express calls the factory itself, with (req, res, next), per request.
  if (options instanceof IncomingMessage) {
    const req = options as unknown as Request
    const { status, headers, body } = factoryMisuse(req.app)
    req.res?.writeHead(status, headers).end(body)
    return () => {}
  }
  const http = createHttpLimiter<Request, Response>(options, EXPRESS)
  // A route(req) of the user's own replaces the pattern: no need to work it out then.
  const routePattern = options.route === undefined ? createRoutePatterns() : () => undefined

  function describe(req: Request): RequestInfo {
    const peerAddress = req.socket.remoteAddress
    const trust: unknown = req.app.get('trust proxy')
    return {
      ip: req.ip ?? peerAddress,
      method: req.method,
      routePattern: routePattern(req),
      manyMethods: routeTakesManyMethods(req),
      forwardedFor: req.headers['x-forwarded-for'] !== undefined,
      trustProxy: trust === true ? 'all' : trust ? 'some' : 'none',
      peerAddress,
    }
  }

  /** Applies the outcome; a response another middleware has sent meanwhile (a request timeout) is left alone. */
  function apply(req: Request, res: Response, next: NextFunction, outcome: HttpOutcome): void {
    // Stacked limiters (app-wide, then per route): the last one to decide sets it.
    if (outcome.decision) req.rateLimit = outcome.decision
    const sent = res.headersSent
    // Another limiter's headers already on the response are kept: every policy that applied is listed.
    const headers = sent ? {} : stackHeaders(outcome.headers, (name) => res.getHeader(name))
    if (outcome.action === 'next') {
      for (const name in headers) res.setHeader(name, headers[name] as string)
      const { decision } = outcome
      if (http.settles && decision?.allowed) {
        onResponseEnd(res, (finished, status) => void http.settle(req, res, decision, finished, status))
      }
      next()
      return
    }
    if (sent) return
    // Written directly, so Express adds no ETag or charset: the same bytes as the other adapters.
    res.writeHead(outcome.status, headers)
    res.end(outcome.body)
  }

  // Nothing awaits this promise: whatever goes wrong goes to Express's error handling, never unhandled.
  return (req, res, next) => {
    http
      .handle(req, describe(req))
      .then((outcome) => apply(req, res, next, outcome))
      .catch(next)
  }
}
