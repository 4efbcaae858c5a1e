import type { Store } from '@fleetlimit/core'
import { rateLimit } from '@fleetlimit/koa'
import Router from '@koa/router'
import Koa from 'koa'
import { globalPolicy, searchPolicy } from '../shared/policies.js'

export function createApp(store: Store) {
  const app = new Koa()
  const router = new Router()

  const limitGlobal = rateLimit({ store, policy: globalPolicy })
  // Both quotas in one atomic call: a search the route quota denies is not counted in the global one.
  const limitSearch = rateLimit({ store, policies: [globalPolicy, searchPolicy] })

  router.get('/users/:id', limitGlobal, (ctx) => {
    ctx.body = { id: ctx.params.id }
  })
  router.get('/search', limitSearch, (ctx) => {
    ctx.body = { query: ctx.query.q ?? '', results: [] }
  })
  app.use(router.routes()).use(router.allowedMethods())
  return app
}
