import { createRateLimiter, definePolicy } from '@fleetlimit/core'
import { expect } from 'chai'
import { hasLimitSource, withoutLimitSource } from '../../packages/fastify/src/limit-source.js'

describe('fastify: the plugin options that set its own limit', () => {
  const policy = definePolicy({ limit: 5, window: '1m' })
  const tenant = () => 't'
  const cost = () => 2
  const plans = () => 10

  it('hasLimitSource: inline policy options, policy, policies or limiter', () => {
    expect(hasLimitSource({ limit: 5 })).to.equal(true)
    expect(hasLimitSource({ window: '1m' })).to.equal(true)
    expect(hasLimitSource({ cost: 2 })).to.equal(true)
    expect(hasLimitSource({ policy })).to.equal(true)
    expect(hasLimitSource({ policies: [policy] })).to.equal(true)
    expect(hasLimitSource({ limiter: createRateLimiter({ limit: 5, window: '1m' }) })).to.equal(true)
  })

  it('hasLimitSource: not the adapter options, nor limit and cost functions alone', () => {
    expect(hasLimitSource({})).to.equal(false)
    expect(hasLimitSource({ tenant, headers: 'draft-7', statusCode: 503, skipFailedRequests: true })).to.equal(false)
    expect(hasLimitSource({ limit: plans, cost })).to.equal(false)
    expect(hasLimitSource({ limit: undefined, policy: undefined } as never)).to.equal(false)
  })

  it('withoutLimitSource: keeps the adapter options, a cost function among them', () => {
    const options = { limit: 5, window: '1m' as const, name: 'api', tenant, cost, headers: 'draft-7' as const, policy }
    expect(withoutLimitSource(options)).to.deep.equal({ tenant, cost, headers: 'draft-7' })
  })

  it('withoutLimitSource: drops a limit function and a cost number, which are the plugin policy’s', () => {
    expect(withoutLimitSource({ limit: plans, window: '1m', cost: 2, legacyHeaders: true })).to.deep.equal({
      legacyHeaders: true,
    })
    expect(
      withoutLimitSource({ policies: [policy], limiter: undefined, skipFailedRequests: true } as never),
    ).to.deep.equal({
      skipFailedRequests: true,
    })
  })

  it('concurrency, a number or a function, is a limit of the plugin’s own, which route policies do not share', () => {
    expect(hasLimitSource({ concurrency: 3 })).to.equal(true)
    expect(hasLimitSource({ concurrency: () => 3 })).to.equal(true)
    expect(
      withoutLimitSource({ concurrency: () => 3, slotTtlMs: '5m', concurrencyStatusCode: 503, tenant }),
    ).to.deep.equal({ concurrencyStatusCode: 503, tenant })
  })
})
