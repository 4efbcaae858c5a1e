import { definePolicy, memoryStore } from '@fleetlimit/core'
import { inlinePolicy } from '@fleetlimit/core/http'
import { expect } from 'chai'

describe('inlinePolicy: the policy options among an adapter’s options', () => {
  it('every policy option given, and only those', () => {
    const store = memoryStore()
    const options = {
      store,
      limit: 5,
      window: '1m' as const,
      name: 'api',
      cost: 2,
      headers: 'draft-7' as const,
      tenant: () => 't',
    }
    expect(inlinePolicy(options)).to.deep.equal({ limit: 5, window: '1m', name: 'api', cost: 2 })
  })

  it('a limit or cost function is the adapter’s, not the policy’s', () => {
    expect(inlinePolicy({ limit: () => 10, cost: () => 2, window: '1m' })).to.deep.equal({ window: '1m' })
  })

  it('concurrency and slotTtlMs make a policy of their own, not the inline one', () => {
    expect(inlinePolicy({ limit: 5, window: '1m', concurrency: 2, slotTtlMs: '5m' })).to.deep.equal({
      limit: 5,
      window: '1m',
    })
    expect(inlinePolicy({ concurrency: () => 2 })).to.deep.equal({})
  })

  it('none for a policy object, or options left undefined', () => {
    const policy = definePolicy({ limit: 5, window: '1m' })
    expect(inlinePolicy({ policy, limit: undefined, window: undefined } as never)).to.deep.equal({})
  })
})
