import { expect } from 'chai'
import { acquireBurst } from '../../examples/demo/acquire-burst.js'
import { storeKinds, useStoreClients } from '../support/stores.js'

describe('the demo scenario: 12 concurrent acquire() at 5 per 500 ms', () => {
  useStoreClients()

  for (const kind of storeKinds) {
    it(`admits in groups of 5, 5, 2 one window apart on ${kind.name}, never more than 5 in a window`, async () => {
      const report = await acquireBurst(kind.make(), { calls: 12, limit: 5, windowMs: 500 })
      expect(report.groups.map((g) => g.length)).to.deep.equal([5, 5, 2])
      expect(report.maxInWindow).to.equal(5)
      const [first, second, third] = report.groups.map((g) => g[0] as number)
      // A unit admitted at t frees its slot at t + 500 on the store's clock, not earlier.
      expect((second as number) - (first as number)).to.be.at.least(500)
      expect((third as number) - (second as number)).to.be.at.least(500 - 1)
    })
  }
})
