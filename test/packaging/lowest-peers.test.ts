import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { definePolicy, memoryStore, redisStore } from '@fleetlimit/core'
import { rateLimit as expressRateLimit } from '@fleetlimit/express'
import { rateLimit as fastifyRateLimit } from '@fleetlimit/fastify'
import { rateLimit as koaRateLimit } from '@fleetlimit/koa'
import Router from '@koa/router'
import { expect } from 'chai'
import express5 from 'express'
import expressLowest from 'express-lowest'
import express4 from 'express4'
import express4Lowest from 'express4-lowest'
import Fastify from 'fastify'
import FastifyLowest from 'fastify-lowest'
import { Redis as LowestRedis } from 'ioredis-lowest'
import Koa3 from 'koa'
import KoaLowest from 'koa-lowest'
import Koa2 from 'koa2'
import Koa2Lowest from 'koa2-lowest'
import request from 'supertest'
import { describeStoreConformance } from '../support/conformance.js'
import { uniquePrefix } from '../support/redis.js'
import { redisUrl } from '../support/root-hooks.js'
import { root } from './pack.js'

// The rest of the suite runs the newest version of each peer range (and Express 4 and Koa 2 as their newest
// 4.x and 2.x): here, the lowest version each range admits, installed under an alias, against the newest.

const version = (alias: string): string =>
  JSON.parse(readFileSync(join(root, 'node_modules', alias, 'package.json'), 'utf8')).version

interface Exchange {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

// The same app on every framework: an app-wide policy of 5 a minute, and one route policy of 1 a minute on
// GET /posts in two routers, mounted under /users/:uid and /teams/:tid. The route policy keys by the route's
// whole pattern: /users/1/posts and /users/2/posts share a window, /teams/1/posts has its own (it would not,
// were the mount patterns misread). GET /hello has only the app's policy.
const appPolicy = definePolicy({ name: 'app', limit: 5, window: '1m' })
const postsPolicy = definePolicy({ name: 'posts', limit: 1, window: '1m' })
const paths = ['/users/1/posts', '/users/2/posts', '/teams/1/posts', '/hello']
const statuses = [200, 429, 200, 200]
const mounts = ['/users/:uid', '/teams/:tid']

function expressApp(express: typeof express5) {
  const app = express()
  app.disable('x-powered-by')
  app.set('etag', false)
  const store = memoryStore()
  app.use(expressRateLimit({ store, policy: appPolicy }))
  const posts = expressRateLimit({ store, policy: postsPolicy })
  for (const mount of mounts) {
    const router = express.Router()
    router.get('/posts', posts, (_req, res) => {
      res.json({ ok: true })
    })
    app.use(mount, router)
  }
  app.get('/hello', (_req, res) => {
    res.json({ ok: true })
  })
  return app
}

function koaApp(Koa: typeof Koa3) {
  const app = new Koa()
  const store = memoryStore()
  app.use(koaRateLimit({ store, policy: appPolicy }))
  const posts = koaRateLimit({ store, policy: postsPolicy })
  for (const prefix of mounts) {
    const router = new Router({ prefix })
    router.get('/posts', posts, (ctx) => {
      ctx.body = { ok: true }
    })
    app.use(router.routes())
  }
  const router = new Router()
  router.get('/hello', (ctx) => {
    ctx.body = { ok: true }
  })
  app.use(router.routes())
  return app.callback()
}

// Fastify's route policy (config.rateLimit) replaces the plugin's for that route, rather than stacking.
async function fastifyApp(fastify: typeof Fastify) {
  const app = fastify()
  await app.register(fastifyRateLimit, { store: memoryStore(), policy: appPolicy })
  for (const prefix of mounts) {
    await app.register(
      async (router) => {
        router.get('/posts', { config: { rateLimit: postsPolicy } }, async () => ({ ok: true }))
      },
      { prefix },
    )
  }
  app.get('/hello', async () => ({ ok: true }))
  await app.ready()
  return app
}

/** Status, headers (less those that differ between any two servers) and body of each request in turn. */
async function transcript(send: (path: string) => Promise<Exchange>): Promise<Exchange[]> {
  const exchanges: Exchange[] = []
  for (const path of paths) {
    const { status, headers, body } = await send(path)
    const { date: _date, connection: _connection, 'keep-alive': _keepAlive, ...kept } = headers
    exchanges.push({ status, headers: kept, body })
  }
  return exchanges
}

const stringHeaders = (headers: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(headers).map(([name, value]) => [name.toLowerCase(), String(value)]))

/** An Express app or a Koa callback, through supertest. */
const supertestSend =
  (handler: Parameters<typeof request>[0]) =>
  async (path: string): Promise<Exchange> => {
    const res = await request(handler).get(path)
    return { status: res.status, headers: stringHeaders(res.headers), body: res.text }
  }

async function fastifyTranscript(fastify: typeof Fastify): Promise<Exchange[]> {
  const app = await fastifyApp(fastify)
  try {
    return await transcript(async (path) => {
      const res = await app.inject({ method: 'GET', url: path })
      return { status: res.statusCode, headers: stringHeaders(res.headers), body: res.body }
    })
  } finally {
    await app.close()
  }
}

const frameworks = [
  {
    name: 'express ^5',
    lowest: `express ${version('express-lowest')}`,
    newest: `express ${version('express')}`,
    run: (lowest: boolean) => transcript(supertestSend(expressApp(lowest ? expressLowest : express5))),
  },
  {
    name: 'express ^4',
    lowest: `express ${version('express4-lowest')}`,
    newest: `express ${version('express4')}`,
    run: (lowest: boolean) =>
      transcript(supertestSend(expressApp((lowest ? express4Lowest : express4) as typeof express5))),
  },
  {
    name: 'koa ^3',
    lowest: `koa ${version('koa-lowest')}`,
    newest: `koa ${version('koa')}`,
    run: (lowest: boolean) => transcript(supertestSend(koaApp(lowest ? KoaLowest : Koa3))),
  },
  {
    name: 'koa ^2',
    lowest: `koa ${version('koa2-lowest')}`,
    newest: `koa ${version('koa2')}`,
    run: (lowest: boolean) => transcript(supertestSend(koaApp((lowest ? Koa2Lowest : Koa2) as typeof Koa3))),
  },
  {
    name: 'fastify ^5',
    lowest: `fastify ${version('fastify-lowest')}`,
    newest: `fastify ${version('fastify')}`,
    // The types of fastify-lowest are its own (5.0.0): the same API, typed as the workspace's.
    run: (lowest: boolean) => fastifyTranscript(lowest ? (FastifyLowest as unknown as typeof Fastify) : Fastify),
  },
]

describe('the lowest version of each framework peer range', () => {
  for (const framework of frameworks) {
    it(`${framework.name}: ${framework.lowest} answers as ${framework.newest} does, route patterns included`, async () => {
      const newest = await framework.run(false)
      expect(
        newest.map((e) => e.status),
        framework.newest,
      ).to.deep.equal(statuses)
      expect(newest[1]?.headers['retry-after'], framework.newest).to.equal('60')
      const lowest = await framework.run(true)
      expect(lowest, framework.lowest).to.deep.equal(newest)
    })
  }
})

// The lowest ioredis the peer range admits (5.2.5: before it, ioredis has no named export `Redis`), through the
// whole store conformance suite; the newest runs in test/core/store/conformance.test.ts.
let lowestClient: LowestRedis | undefined
describeStoreConformance(
  `redisStore on ioredis ${version('ioredis-lowest')}, the lowest of the peer range`,
  () => {
    lowestClient ??= new LowestRedis(redisUrl(), { maxRetriesPerRequest: 1 })
    return redisStore(lowestClient, { prefix: uniquePrefix() })
  },
  async () => {
    await lowestClient?.quit()
    lowestClient = undefined
  },
)
