import type { Store } from '@fleetlimit/core'
import { rateLimit } from '@fleetlimit/fastify'
import Fastify from 'fastify'
import { globalPolicy, searchPolicy } from '../shared/policies.js'

export async function createApp(store: Store) {
  const app = Fastify()
  // The plugin's policy applies to every route without a config.rateLimit of its own.
  await app.register(rateLimit, { store, policy: globalPolicy })

  app.get<{ Params: { id: string } }>('/users/:id', async (request) => ({ id: request.params.id }))
  // Both quotas in one atomic call: a search the route quota denies is not counted in the global one.
  app.get<{ Querystring: { q?: string } }>(
    '/search',
    { config: { rateLimit: [globalPolicy, searchPolicy] } },
    async (request) => ({ query: request.query.q ?? '', results: [] }),
  )
  app.get('/health', { config: { rateLimit: false } }, async () => ({ ok: true }))
  return app
}
