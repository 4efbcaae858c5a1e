import { expect } from 'chai'
import { combine, type Decision, enforce, toDecision } from '../../../packages/core/src/limiter/decision.js'
import { definePolicy } from '../../../packages/core/src/limiter/policy.js'

const result = { allowed: false, remaining: 0, retryAfterMs: 400, resetMs: 900, now: 0 }
const decision = (policy: string, fields: Partial<Decision>): Decision => ({
  allowed: true,
  limit: 10,
  remaining: 5,
  retryAfterMs: 0,
  resetMs: 1_000,
  source: 'store',
  policy,
  ...fields,
})

describe('decision', () => {
  it('toDecision copies a window’s result under the call’s limit, the policy’s, or the fallback’s', () => {
    const policy = definePolicy({
      name: 'api',
      limit: 10,
      window: '1s',
      onStoreError: 'fail-open',
      fallback: { limit: 2 },
    })
    const fields = { allowed: false, remaining: 0, retryAfterMs: 400, resetMs: 900, policy: 'api' }
    expect(toDecision(result, 'store', policy)).to.deep.equal({ ...fields, limit: 10, source: 'store' })
    expect(toDecision(result, 'store', policy, 50)).to.deep.equal({ ...fields, limit: 50, source: 'store' })
    expect(toDecision(result, 'fallback', policy, 50)).to.deep.equal({ ...fields, limit: 2, source: 'fallback' })
    const shadow = definePolicy({ name: 'trial', limit: 10, window: '1s', shadow: true })
    expect(toDecision(result, 'store', shadow)).to.deep.equal({
      ...fields,
      policy: 'trial',
      limit: 10,
      source: 'store',
      shadow: true,
    })
  })

  it('enforce lets a shadow denial through with no wait, and leaves any other decision as it is', () => {
    const denied = decision('trial', { allowed: false, remaining: 0, retryAfterMs: 300, shadow: true })
    const { shadow: _, ...rest } = denied
    expect(enforce(denied)).to.deep.equal({ ...rest, allowed: true, retryAfterMs: 0, shadowDenied: true })
    const plain = decision('api', { allowed: false, retryAfterMs: 300 })
    expect(enforce(plain)).to.equal(plain)
    const admitted = decision('trial', { shadow: true })
    expect(enforce(admitted)).to.equal(admitted)
  })

  it('combine admits only if every policy admits; the least remaining leads an admission', () => {
    const a = decision('a', { remaining: 5 })
    const b = decision('b', { remaining: 2, limit: 3 })
    expect(combine([a])).to.equal(a)
    expect(combine([a, b])).to.deep.equal({ ...b, policies: [a, b] })
  })

  it('combine: the longest wait leads a denial, after which every policy has room', () => {
    const a = decision('a', { allowed: false, remaining: 0, retryAfterMs: 100 })
    const b = decision('b', { allowed: false, remaining: 0, retryAfterMs: 700 })
    const c = decision('c', { remaining: 1 })
    expect(combine([a, b, c])).to.deep.equal({ ...b, allowed: false, policies: [a, b, c] })
  })

  it('combine: shadow policies decide nothing beside an enforced one, but say when they would deny', () => {
    const enforced = decision('api', { remaining: 4 })
    const trial = decision('trial', { allowed: false, remaining: 0, retryAfterMs: 900, shadow: true })
    expect(combine([enforced, trial])).to.deep.equal({ ...enforced, policies: [enforced, trial], shadowDenied: true })
    const both = [decision('t1', { shadow: true, remaining: 3 }), trial]
    expect(combine(both)).to.deep.equal({
      ...decision('trial', { remaining: 0 }),
      allowed: true,
      retryAfterMs: 0,
      shadowDenied: true,
      policies: both,
    })
  })
})
