import { createRateLimiter, definePolicy } from '@fleetlimit/core'
import { expect } from 'chai'
import { type Exchange, flavours } from '../support/adapter-harness.js'
import { adapterStores } from '../support/adapter-stores.js'

/** The headers a test asserts: the limiter's, and nothing the server adds. */
const limiterHeaders = ({ status, headers }: Exchange) => ({
  status,
  'retry-after': headers['retry-after'],
  'ratelimit-policy': headers['ratelimit-policy'],
  ratelimit: headers.ratelimit,
})

describe('adapters: a denial states only figures the limiter knows to be true', () => {
  const stores = adapterStores()
  // The two-policy app of docs/frameworks.md: a tenant-wide quota beside a stricter one per route.
  const globalPolicy = definePolicy({ name: 'global', limit: 100, window: '1m', scope: 'tenant' })
  const searchPolicy = definePolicy({ name: 'search', limit: 5, window: '10s' })

  for (const flavour of flavours.filter((f) => f.name.startsWith('express'))) {
    for (const kind of stores) {
      it(`${flavour.name} (${kind.name}): a cached denial leaves out the policies other calls have counted in since`, async () => {
        const app = await flavour.build({
          shared: { store: kind.make() },
          route: [globalPolicy, searchPolicy],
          tenantFromQuery: true,
        })
        try {
          for (let i = 0; i < 5; i++) expect((await app.request('GET', '/search?t=a')).status).to.equal(200)
          expect(limiterHeaders(await app.request('GET', '/search?t=a')), 'the store’s denial').to.deep.equal({
            status: 429,
            'retry-after': '10',
            'ratelimit-policy': '"global";q=100;w=60, "search";q=5;w=10',
            ratelimit: '"global";r=95;t=60, "search";r=0;t=10',
          })
          for (let i = 0; i < 3; i++) expect((await app.request('GET', '/users/1?t=a')).status).to.equal(200)
          // The global quota now has 92 left: the cached denial knows the search policy's figures only.
          expect(limiterHeaders(await app.request('GET', '/search?t=a')), 'the cached denial').to.deep.equal({
            status: 429,
            'retry-after': '10',
            'ratelimit-policy': '"search";q=5;w=10',
            ratelimit: '"search";r=0;t=10',
          })
          // /users/:id is one route: its fourth call.
          expect((await app.request('GET', '/users/2?t=a')).headers.ratelimit).to.equal(
            '"global";r=91;t=60, "search";r=1;t=10',
          )
        } finally {
          await app.close()
        }
      })

      it(`${flavour.name} (${kind.name}): a paused key answers 429 with r=0, from the store and from the deny cache`, async () => {
        const store = kind.make()
        const policy = definePolicy({ name: 'upstream', limit: 5, window: '1m' })
        const app = await flavour.build({ shared: { store }, route: policy, tenantFromQuery: true })
        try {
          expect((await app.request('GET', '/search?t=a')).headers.ratelimit).to.equal('"upstream";r=4;t=60')
          await createRateLimiter({ store, ...policy }).pause({ tenant: 'a', route: 'GET /search' }, '10m')
          const paused = {
            status: 429,
            'retry-after': '600',
            'ratelimit-policy': '"upstream";q=5;w=60',
            ratelimit: '"upstream";r=0;t=600',
          }
          expect(limiterHeaders(await app.request('GET', '/search?t=a')), 'the store’s denial').to.deep.equal(paused)
          expect(limiterHeaders(await app.request('GET', '/search?t=a')), 'the cached denial').to.deep.equal(paused)
        } finally {
          await app.close()
        }
      })
    }
  }
})
