import { definePolicy, memoryStore } from '@fleetlimit/core'
import { rateLimit } from '@fleetlimit/express'
import { expect } from 'chai'
import express5, { type Request, type Response } from 'express'
import express4 from 'express4'
import request from 'supertest'
import { createRoutePatterns, UNKNOWN_MOUNT } from '../../packages/express/src/route-pattern.js'

type Express = typeof express5

/** An app whose handlers answer with the pattern the adapter would key the request by. */
function echoApp(express: Express) {
  const app = express()
  const patternOf = createRoutePatterns()
  const echo = (req: Request, res: Response) => {
    res.json({ pattern: patternOf(req) ?? null })
  }
  return { app, echo }
}

async function patterns(app: express5.Express, paths: readonly string[]): Promise<unknown[]> {
  const found: unknown[] = []
  for (const path of paths) {
    const res = await request(app).get(path)
    expect(res.status, path).to.equal(200)
    found.push(res.body.pattern)
  }
  return found
}

const major5 = express5 as Express
const major4 = express4 as Express

for (const [name, express] of [
  ['express 5', major5],
  ['express 4', major4],
] as const) {
  describe(`${name}: the route pattern of a request`, () => {
    it('is the route’s path for a route on the app, and undefined before routing', async () => {
      const { app, echo } = echoApp(express)
      const patternOf = createRoutePatterns()
      let beforeRouting: unknown = 'unset'
      app.use((req, _res, next) => {
        beforeRouting = patternOf(req)
        next()
      })
      app.get('/users/:id', echo)
      expect(await patterns(app, ['/users/1', '/USERS/2'])).to.deep.equal(['/users/:id', '/users/:id'])
      expect(beforeRouting).to.equal(undefined)
    })

    it('joins the patterns of nested routers, whatever their parameters and letter case', async () => {
      const { app, echo } = echoApp(express)
      const orgs = express.Router()
      const teams = express.Router({ mergeParams: true })
      teams.get('/members/:id', echo)
      orgs.use('/teams/:team', teams)
      app.use('/orgs/:org', orgs)
      const paths = [
        '/orgs/acme/teams/7/members/9',
        '/ORGS/x%20y/Teams/8/members/1',
        `/orgs/${'o'.repeat(5_000)}/teams/%2F/members/1`,
      ]
      expect(await patterns(app, paths)).to.deep.equal(paths.map(() => '/orgs/:org/teams/:team/members/:id'))
    })

    it('tells apart the mounts of a router mounted twice, and each path of a path array', async () => {
      const { app, echo } = echoApp(express)
      const posts = express.Router()
      posts.get('/posts', echo)
      app.use('/users/:uid', posts)
      app.use(['/a', '/b/:x'], posts)
      app.use('/slash/', posts)
      expect(await patterns(app, ['/users/1/posts', '/A/posts', '/b/2/posts', '/slash/posts'])).to.deep.equal([
        '/users/:uid/posts',
        '/a/posts',
        '/b/:x/posts',
        '/slash/posts',
      ])
    })

    it('keys a regexp or wildcard mount by the pattern, not the text it matched', async () => {
      const { app, echo } = echoApp(express)
      const posts = express.Router()
      posts.get('/posts', echo)
      // A wildcard mount takes the rest of the path: its router's routes see '/'.
      const files = express.Router()
      files.get('/', echo)
      app.use(/^\/v\d+/, posts)
      app.use(express === major5 ? '/files/*rest' : '/files/*', files)
      const [v1, v2, f1, f2] = await patterns(app, ['/v1/posts', '/v22/posts', '/files/a', '/files/b/c/d'])
      expect(v1)
        .to.equal(`${String(/^\/v\d+/)}/posts`)
        .and.equal(v2)
      expect(f1)
        .to.equal(express === major5 ? '/files/*rest/' : '/files/:0/')
        .and.equal(f2)
    })

    it('includes the mount path of an app mounted in another', async () => {
      const { app, echo } = echoApp(express)
      const tenant = express()
      const users = express.Router()
      users.get('/posts', echo)
      tenant.get('/info', echo)
      tenant.use('/users/:uid', users)
      app.use('/tenants/:tid', tenant)
      expect(
        await patterns(app, ['/tenants/1/info', '/tenants/2/users/3/posts', '/TENANTS/4/users/5/posts']),
      ).to.deep.equal(['/tenants/:tid/info', '/tenants/:tid/users/:uid/posts', '/tenants/:tid/users/:uid/posts'])
    })

    it('falls back to one bounded key for a mount it cannot read (a router called from a function)', async () => {
      const { app, echo } = echoApp(express)
      const posts = express.Router()
      posts.get('/posts', echo)
      app.use('/wrapped/:id', (req, res, next) => posts(req, res, next))
      expect(await patterns(app, ['/wrapped/1/posts', '/WRAPPED/2/posts'])).to.deep.equal([
        `${UNKNOWN_MOUNT}/posts`,
        `${UNKNOWN_MOUNT}/posts`,
      ])
    })

    it('limits a route under a mount it cannot read in one window, never per raw path', async () => {
      const store = memoryStore()
      const app = express()
      const posts = express.Router()
      posts.get(
        '/posts',
        rateLimit({ store, policy: definePolicy({ name: 'p', limit: 3, window: '1m' }) }),
        (_q, s) => {
          s.end('ok')
        },
      )
      app.use('/wrapped/:id', (req, res, next) => posts(req, res, next))
      const statuses: number[] = []
      for (let i = 0; i < 10; i++) statuses.push((await request(app).get(`/wrapped/${i}/posts`)).status)
      expect(statuses.filter((s) => s === 200)).to.have.length(3)
      expect(store.size).to.equal(1)
    })
  })
}

describe('express 5 on router 2.2 and older (mount paths not kept): the route pattern', () => {
  /** Removes what router 2.3 added to its layers, as an older router's layers are. */
  function asOldRouter(stack: unknown): void {
    for (const layer of stack as { rawPath?: unknown; handle?: { stack?: unknown } }[]) {
      delete layer.rawPath
      if (layer.handle?.stack) asOldRouter(layer.handle.stack)
    }
  }

  it('is rebuilt from the match, case-folded, with each parameter as :name', async () => {
    const { app, echo } = echoApp(major5)
    const posts = major5.Router()
    posts.get('/posts', echo)
    const files = major5.Router()
    files.get('/', echo)
    app.use('/users/:uid', posts)
    app.use('/file-:name', posts)
    app.use('/files/*rest', files)
    asOldRouter(app.router.stack)
    expect(
      await patterns(app, [
        '/users/1/posts',
        '/USERS/abc/posts',
        '/file-a/posts',
        '/FILE-b/posts',
        '/files/a',
        '/files/a/b/c',
      ]),
    ).to.deep.equal([
      '/users/:uid/posts',
      '/users/:uid/posts',
      '/*/posts',
      '/*/posts',
      '/files/*rest/',
      '/files/*rest/',
    ])
  })
})
