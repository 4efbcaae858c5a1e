import { createRateLimiter, definePolicy, isFleetlimitError, memoryStore } from '@fleetlimit/core'
import { inlinePolicy } from '@fleetlimit/core/http'
import { expect } from 'chai'
import type { HttpRateLimitOptions } from '../../../packages/core/src/http/http-options.js'
import { resolveLimiter } from '../../../packages/core/src/http/limiter-setup.js'
import { MAX_LIMIT } from '../../../packages/core/src/limiter/policy.js'

/** The OptionError resolveLimiter throws for `options`: its option and message. */
function refusal(options: HttpRateLimitOptions<unknown>): { option: string; message: string } {
  try {
    resolveLimiter(options)
  } catch (error) {
    expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION'), String(error)).to.equal(true)
    return { option: (error as { option: string }).option, message: (error as Error).message }
  }
  return expect.fail('resolveLimiter was expected to throw')
}

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

describe('resolveLimiter: the limiter an adapter decides with', () => {
  it('takes a limiter it is given as it is, with no limits mapped', () => {
    const limiter = createRateLimiter({ store: memoryStore(), limit: 5, window: '1m' })
    expect(resolveLimiter({ limiter })).to.deep.equal({
      limiter,
      unlimited: undefined,
      ownInFlight: undefined,
      rateName: undefined,
    })
  })

  it('builds one from inline options, a policy, or policies', () => {
    const store = memoryStore()
    const inline = resolveLimiter({ store, limit: 5, window: '1m', name: 'api' })
    expect(inline.limiter.policies.map((p) => [p.name, p.limit, p.window])).to.deep.equal([['api', 5, 60_000]])
    const policy = definePolicy({ limit: 3, window: '10s', name: 'one' })
    expect(resolveLimiter({ store, policy }).limiter.policies.map((p) => p.name)).to.deep.equal(['one'])
    const two = [policy, definePolicy({ limit: 9, window: '1h', name: 'two' })]
    expect(resolveLimiter({ store, policies: two }).limiter.policies.map((p) => p.name)).to.deep.equal(['one', 'two'])
  })

  it('limit(req) with inline options: the policy limit is the ceiling, its name from the window, and unlimited', () => {
    const setup = resolveLimiter({ store: memoryStore(), limit: () => 5, window: '1m' })
    expect(setup.limiter.policy).to.include({ name: 'plan-per-60000ms', limit: MAX_LIMIT })
    expect(setup.unlimited).to.equal('plan-per-60000ms')
  })

  it('concurrency adds an in-flight policy after the rate policy, which a bare limit then names', () => {
    const store = memoryStore()
    const both = resolveLimiter({ store, limit: 5, window: '1m', name: 'api', concurrency: 2 })
    expect(both.limiter.policies.map((p) => [p.name, p.concurrency])).to.deep.equal([
      ['api', undefined],
      [both.ownInFlight, 2],
    ])
    expect(both.rateName).to.equal('api')
    const alone = resolveLimiter({ store, concurrency: 3 })
    expect(alone.limiter.policies.map((p) => p.concurrency)).to.deep.equal([3])
    expect(alone.ownInFlight).to.equal(alone.limiter.policy.name)
    expect(alone.rateName).to.equal(undefined)
  })

  it('refuses no source, or two of them, naming them', () => {
    const store = memoryStore()
    expect(refusal({ store })).to.deep.equal({
      option: 'limit',
      message:
        'fleetlimit: invalid option `limit`: got undefined; expected exactly one of: inline policy options (limit, window, …), `policy`, `policies` or `limiter`.',
    })
    const policy = definePolicy({ limit: 3, window: '10s' })
    expect(refusal({ store, policy, limit: 5, window: '1m' }).option).to.equal('policy + limit, window')
  })

  it('refuses slotTtlMs without concurrency, and a store or concurrency beside a limiter', () => {
    const limiter = createRateLimiter({ store: memoryStore(), limit: 5, window: '1m' })
    expect(refusal({ limit: 5, window: '1m', slotTtlMs: 1_000 })).to.deep.equal({
      option: 'slotTtlMs',
      message:
        'fleetlimit: invalid option `slotTtlMs`: got 1000; expected no slotTtlMs without `concurrency`: it is the life of its slots.',
    })
    expect(refusal({ limiter, store: memoryStore() }).option).to.equal('store')
    expect(refusal({ limiter, concurrency: 2 }).option).to.equal('concurrency')
    expect(refusal({ limiter: {} as never }).option).to.equal('limiter')
    expect(refusal({ store: memoryStore(), policy: 5 as never }).option).to.equal('policy')
  })
})
