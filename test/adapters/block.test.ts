import { definePolicy } from '@fleetlimit/core'
import { expect } from 'chai'
import { flavours } from '../support/adapter-harness.js'
import { adapterStores } from '../support/adapter-stores.js'

describe('adapters: blockFor', () => {
  const stores = adapterStores()

  for (const flavour of flavours) {
    for (const kind of stores) {
      it(`${flavour.name} (${kind.name}): once denied, 429 with Retry-After the block, for that tenant only`, async () => {
        const app = await flavour.build({
          shared: { store: kind.make() },
          app: definePolicy({ name: 'login', limit: 2, window: '1m', blockFor: '10m' }),
          tenantFromQuery: true,
        })
        try {
          const statuses = []
          for (let i = 0; i < 3; i++) statuses.push((await app.request('GET', '/search?t=a')).status)
          expect(statuses).to.deep.equal([200, 200, 429])
          const blocked = await app.request('GET', '/search?t=a')
          expect(blocked.status).to.equal(429)
          expect(Number(blocked.headers['retry-after'])).to.be.within(590, 600)
          expect((await app.request('GET', '/search?t=b')).status).to.equal(200)
        } finally {
          await app.close()
        }
      })
    }
  }
})
