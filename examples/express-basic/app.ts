import { createRateLimiter, type Store } from '@fleetlimit/core'
import { rateLimit } from '@fleetlimit/express'
import express, { type Express } from 'express'
import { globalPolicy, searchPolicy } from '../shared/policies.js'

export function createApp(store: Store): Express {
  const app = express()
  app.disable('x-powered-by')

  const globalLimiter = createRateLimiter({ store, ...globalPolicy })
  const limitGlobal = rateLimit({ limiter: globalLimiter })
  // Both quotas in one atomic call: a search the route quota denies is not counted in the global one.
  const limitSearch = rateLimit({ store, policies: [globalPolicy, searchPolicy] })

  app.get('/users/:id', limitGlobal, (req, res) => {
    res.json({ id: req.params.id })
  })
  app.get('/search', limitSearch, (req, res) => {
    res.json({ query: req.query.q ?? '', results: [] })
  })
  // A readiness probe: 503 while decisions cannot come from the store (Redis down, or its breaker open), so
  // that the load balancer sends requests elsewhere; 200 again as soon as Redis answers.
  app.get('/healthz', async (_req, res) => {
    const ready = await globalLimiter.ready()
    res.status(ready ? 200 : 503).json({ store: ready ? 'ready' : 'unavailable' })
  })
  return app
}
