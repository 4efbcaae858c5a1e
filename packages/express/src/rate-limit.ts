import { createHttpLimiter, type HttpRateLimitOptions, type RequestInfo } from '@fleetlimit/core'
import type { Request, RequestHandler } from 'express'

export type ExpressRateLimitOptions = HttpRateLimitOptions<Request>

const EXPRESS = { name: 'Express', trustProxyHint: "Set app.set('trust proxy', …) to your proxy hops or addresses" }

function describe(req: Request): RequestInfo {
  // req.route is set once a route matched: in per-route middleware, not in app.use() before routing.
  const route = req.route as { path?: unknown } | undefined
  return {
    ip: req.ip ?? req.socket.remoteAddress,
    method: req.method,
    routePattern: route?.path === undefined ? undefined : `${req.baseUrl}${String(route.path)}`,
    untrustedForwardedFor: req.headers['x-forwarded-for'] !== undefined && !req.app.get('trust proxy'),
  }
}

/** Express middleware: `app.use(rateLimit({ store, limit: 100, window: '1m' }))`, or per route. */
export function rateLimit(options: ExpressRateLimitOptions): RequestHandler {
  const http = createHttpLimiter<Request>(options, EXPRESS)
  return (req, res, next) => {
    http.handle(req, describe(req)).then((outcome) => {
      if (outcome.action === 'next') {
        for (const [name, value] of Object.entries(outcome.headers)) res.setHeader(name, value)
        next()
        return
      }
      // Written directly, so Express adds no ETag or charset: the same bytes as the other adapters.
      res.writeHead(outcome.status, outcome.headers)
      res.end(outcome.body)
    }, next)
  }
}
