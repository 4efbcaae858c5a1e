// The floor under the overhead part's in-memory rows: a middleware that does only what any limiter on the
// framework must, with nothing of fleetlimit's. It counts a request in a Map by client IP (a fixed window, reset
// when it ends), and sends the headers and answers fleetlimit sends: draft-8's RateLimit and RateLimit-Policy,
// and on denial a 429 with Retry-After and a problem+json body of the same shape.
import type { RequestHandler } from 'express'
import type { Middleware } from 'koa'
import type { Framework, Guard } from './servers.js'

export const FLOOR = 'floor: Map counter, same headers'

interface Answer {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body?: string
}

function createCounter(limit: number, windowMs: number): (ip: string) => Answer {
  const counts = new Map<string, { count: number; resetAt: number }>()
  const name = `${limit}-per-${windowMs}ms`
  const policy = `"${name}";q=${limit};w=${Math.ceil(windowMs / 1000)}`
  return (ip) => {
    const now = Date.now()
    let entry = counts.get(ip)
    if (entry === undefined || entry.resetAt <= now) {
      entry = { count: 0, resetAt: now + windowMs }
      counts.set(ip, entry)
    }
    const reset = Math.ceil((entry.resetAt - now) / 1000)
    if (entry.count >= limit) {
      const headers = {
        'retry-after': String(reset),
        'ratelimit-policy': policy,
        ratelimit: `"${name}";r=0;t=${reset}`,
      }
      const body = JSON.stringify({
        type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
        title: 'Too Many Requests',
        status: 429,
        detail: `Quota exceeded for policy "${name}"; retry in ${reset} s.`,
        'violated-policies': [name],
        'retry-after': reset,
      })
      return { status: 429, headers, body }
    }
    entry.count++
    return {
      status: 200,
      headers: { 'ratelimit-policy': policy, ratelimit: `"${name}";r=${limit - entry.count};t=${reset}` },
    }
  }
}

const PROBLEM = 'application/problem+json'

export function floorGuard(framework: Framework, { limit, windowMs }: { limit: number; windowMs: number }): Guard {
  const count = createCounter(limit, windowMs)
  switch (framework) {
    case 'Express': {
      const middleware: RequestHandler = (req, res, next) => {
        const { status, headers, body } = count(req.ip ?? '')
        if (body === undefined) {
          for (const name in headers) res.setHeader(name, headers[name] as string)
          return next()
        }
        res.writeHead(status, { ...headers, 'content-type': PROBLEM }).end(body)
      }
      return { framework, middleware }
    }
    case 'Koa': {
      const middleware: Middleware = (ctx, next) => {
        const { status, headers, body } = count(ctx.ip)
        ctx.set(headers)
        if (body === undefined) return next()
        ctx.status = status
        ctx.type = PROBLEM
        ctx.body = body
      }
      return { framework, middleware }
    }
    case 'Fastify':
      return {
        framework,
        async register(app) {
          app.addHook('onRequest', async (request, reply) => {
            if (request.url === '/health') return
            const { status, headers, body } = count(request.ip)
            reply.headers(headers)
            if (body !== undefined) return reply.code(status).type(PROBLEM).send(Buffer.from(body))
          })
        },
      }
  }
}
