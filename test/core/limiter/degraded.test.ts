import { expect } from 'chai'
import sinon from 'sinon'
import { createDegradedMode, type Window } from '../../../packages/core/src/limiter/degraded.js'
import { definePolicy, type Policy } from '../../../packages/core/src/limiter/policy.js'

const failOpen = (name: string, limit: number, fallback?: number) =>
  definePolicy({
    name,
    limit,
    window: '1s',
    onStoreError: 'fail-open',
    ...(fallback === undefined ? {} : { fallback: { limit: fallback } }),
  })
const windowOf = (policy: Policy, key = `k:${policy.name}`): Window => ({ policy, key, limit: policy.limit })

describe('createDegradedMode', () => {
  let clock: sinon.SinonFakeTimers
  beforeEach(() => {
    clock = sinon.useFakeTimers({ now: 1_000_000 })
  })
  afterEach(() => clock.restore())

  it('with no fallback, admits with the policy’s numbers and invents none', async () => {
    const policy = failOpen('api', 10)
    const mode = createDegradedMode([policy])
    const open = { allowed: true, limit: 10, remaining: 10, retryAfterMs: 0, resetMs: 0, source: 'open', policy: 'api' }
    expect(await mode.decide([windowOf(policy)], 1)).to.deep.equal(open)
    expect(await mode.decide([windowOf(policy)], 50)).to.deep.equal(open)
  })

  it('with a fallback, decides in a strict window of this process under the fallback limit', async () => {
    const policy = failOpen('api', 10, 2)
    const mode = createDegradedMode([policy])
    const window = windowOf(policy)
    const fields = { limit: 2, source: 'fallback', policy: 'api' }
    expect(await mode.decide([window], 1)).to.deep.equal({
      ...fields,
      allowed: true,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: 1_000,
    })
    clock.tick(300)
    expect(await mode.decide([window], 1)).to.deep.equal({
      ...fields,
      allowed: true,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 1_000,
    })
    expect(await mode.decide([window], 1)).to.deep.equal({
      ...fields,
      allowed: false,
      remaining: 0,
      retryAfterMs: 700,
      resetMs: 1_000,
    })
    await mode.reset(window.key)
    expect(await mode.decide([window], 1)).to.deep.equal({
      ...fields,
      allowed: true,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: 1_000,
    })
  })

  it('a cost above the fallback limit counts as the whole limit, so it is admitted alone', async () => {
    const policy = failOpen('api', 10, 2)
    const mode = createDegradedMode([policy])
    expect(await mode.decide([windowOf(policy)], 5)).to.include({ allowed: true, remaining: 0, limit: 2 })
  })

  it('with several policies, only those with a fallback decide, combined', async () => {
    const strict = failOpen('strict', 10, 1)
    const loose = failOpen('loose', 100)
    const mode = createDegradedMode([loose, strict])
    const windows = [windowOf(loose), windowOf(strict)]
    expect(await mode.decide(windows, 1)).to.deep.equal({
      allowed: true,
      limit: 1,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 1_000,
      source: 'fallback',
      policy: 'strict',
    })
    expect(await mode.decide(windows, 1)).to.include({ allowed: false, policy: 'strict', retryAfterMs: 1_000 })
  })
})
