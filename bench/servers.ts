// One HTTP server per framework, built the same way for every part: `GET /` answers `{"ok":true}` behind an
// optional guard (a limiter's middleware or plugin), and `GET /health` is never limited, so a client can open
// its connections before a timed run.
import { once } from 'node:events'
import { createServer, type IncomingHttpHeaders, type RequestListener } from 'node:http'
import type { AddressInfo } from 'node:net'
import express, { type RequestHandler } from 'express'
import Fastify, { type FastifyInstance } from 'fastify'
import Koa, { type Middleware } from 'koa'

export type Framework = 'Express' | 'Fastify' | 'Koa'

/** The key a guard counts a request under, read from its headers; without one, each limiter's default (the IP). */
export type KeyOf = (headers: IncomingHttpHeaders) => string

/** What a limiter puts in front of a framework's handler. */
export type Guard =
  | { readonly framework: 'Express'; readonly middleware: RequestHandler }
  | { readonly framework: 'Koa'; readonly middleware: Middleware }
  | { readonly framework: 'Fastify'; register(app: FastifyInstance): Promise<void> }

export interface ServerOptions {
  /** None: the bare framework. */
  readonly guard?: Guard
  /** Runs each time the handler behind the guard does. */
  readonly onHandler?: () => void
}

export interface BenchServer {
  readonly port: number
  readonly url: string
  close(): Promise<void>
}

const BODY = { ok: true }

export async function startServer(
  framework: Framework,
  { guard, onHandler }: ServerOptions = {},
): Promise<BenchServer> {
  if (guard && guard.framework !== framework) throw new Error(`a ${guard.framework} guard on a ${framework} server`)
  const handled = () => {
    onHandler?.()
    return BODY
  }
  switch (framework) {
    case 'Express': {
      const app = express()
      app.disable('x-powered-by')
      app.get('/health', (_req, res) => {
        res.json(BODY)
      })
      const limited = guard?.framework === 'Express' ? [guard.middleware] : []
      app.get('/', ...limited, (_req, res) => {
        res.json(handled())
      })
      return listen(app)
    }
    case 'Koa': {
      const app = new Koa()
      app.use(async (ctx, next) => {
        if (ctx.path === '/health') ctx.body = BODY
        else await next()
      })
      if (guard?.framework === 'Koa') app.use(guard.middleware)
      app.use((ctx) => {
        ctx.body = handled()
      })
      return listen(app.callback())
    }
    case 'Fastify': {
      const app = Fastify()
      // Registered before the routes, so a plugin's onRoute hook sees them.
      if (guard?.framework === 'Fastify') await guard.register(app)
      app.get('/health', { config: { rateLimit: false } }, async () => BODY)
      app.get('/', async () => handled())
      await app.listen({ host: '127.0.0.1', port: 0 })
      const { port } = app.server.address() as AddressInfo
      return { port, url: `http://127.0.0.1:${port}/`, close: () => app.close() }
    }
  }
}

async function listen(handler: RequestListener): Promise<BenchServer> {
  const server = createServer(handler)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    port,
    url: `http://127.0.0.1:${port}/`,
    async close() {
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    },
  }
}
