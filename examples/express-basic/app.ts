import type { Store } from '@fleetlimit/core'
import { rateLimit } from '@fleetlimit/express'
import express, { type Express } from 'express'
import { globalPolicy, searchPolicy } from '../shared/policies.js'

export function createApp(store: Store): Express {
  const app = express()
  app.disable('x-powered-by')

  const limitGlobal = rateLimit({ store, policy: globalPolicy })
  // Both quotas in one atomic call: a search the route quota denies is not counted in the global one.
  const limitSearch = rateLimit({ store, policies: [globalPolicy, searchPolicy] })

  app.get('/users/:id', limitGlobal, (req, res) => {
    res.json({ id: req.params.id })
  })
  app.get('/search', limitSearch, (req, res) => {
    res.json({ query: req.query.q ?? '', results: [] })
  })
  return app
}
