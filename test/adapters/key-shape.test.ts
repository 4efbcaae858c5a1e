import { createRateLimiter, definePolicy, memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'
import { flavours } from '../support/adapter-harness.js'

// The README's "Keys of the adapters" (beside peek and reset): what a middleware counts under, so that an operator
// can peek at it and reset it with the policy's own limiter.
describe('adapters: the key an app-level middleware counts under is { tenant, route: "*" }', () => {
  for (const flavour of flavours) {
    it(`peek and reset name it; { tenant } alone is another key (${flavour.name})`, async () => {
      const store = memoryStore()
      const policy = definePolicy({ name: 'app', limit: 2, window: '1m' })
      const app = await flavour.build({ shared: { store }, tenantFromQuery: true, app: policy })
      const limiter = createRateLimiter({ store, ...policy })
      try {
        const statuses = []
        for (let i = 0; i < 3; i++) statuses.push((await app.request('GET', '/search?t=acme')).status)
        expect(statuses).to.deep.equal([200, 200, 429])
        expect(await limiter.peek({ tenant: 'acme', route: '*' })).to.include({ allowed: false, remaining: 0 })
        expect(await limiter.peek({ tenant: 'acme' })).to.include({ allowed: true, remaining: 2 })

        await limiter.reset({ tenant: 'acme' })
        expect((await app.request('GET', '/search?t=acme')).status, 'another key: still denied').to.equal(429)
        await limiter.reset({ tenant: 'acme', route: '*' })
        expect((await app.request('GET', '/search?t=acme')).status).to.equal(200)
      } finally {
        await app.close()
      }
    })
  }
})
