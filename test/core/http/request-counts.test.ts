import { createRateLimiter, type Decision, definePolicy, isFleetlimitError, memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'
import { createRequestCounts } from '../../../packages/core/src/http/request-counts.js'
import { thrown } from '../../support/thrown.js'

const decisionOf = (policy: string, remaining: number, policies?: Decision[]): Decision => ({
  allowed: true,
  limit: 10,
  remaining,
  retryAfterMs: 0,
  resetMs: 1_000,
  source: 'store',
  policy,
  ...(policies && { policies }),
})

const global = definePolicy({ name: 'global', limit: 10, window: '1m', scope: 'tenant' })
const search = definePolicy({ name: 'search', limit: 3, window: '1m' })

describe('request counts (http/request-counts.ts)', () => {
  it('enter is true once per limiter and request, for any middleware built on that limiter', () => {
    const limiter = createRateLimiter({ store: memoryStore(), policies: [global] })
    const other = createRateLimiter({ store: memoryStore(), policies: [global] })
    const req = {}
    const first = createRequestCounts(limiter)
    expect(first.enter(req)).to.equal(true)
    expect(first.enter(req)).to.equal(false)
    expect(createRequestCounts(limiter).enter(req)).to.equal(false)
    expect(createRequestCounts(other).enter(req)).to.equal(true)
    expect(first.enter({})).to.equal(true)
  })

  it('earlier reuses the decision of a middleware that counted the same store key, and none on another store', async () => {
    const store = memoryStore()
    const first = createRequestCounts(createRateLimiter({ store, policies: [global] }))
    const second = createRequestCounts(createRateLimiter({ store, policies: [global] }))
    const elsewhere = createRequestCounts(createRateLimiter({ store: memoryStore(), policies: [global] }))
    const req = {}
    const input = { tenant: 't', route: 'GET /a' }
    // A call is remembered for a request this middleware entered.
    first.counted(req, input, undefined, Promise.resolve(decisionOf('global', 0)))
    expect(second.earlier(req, input, undefined)).to.equal(undefined)
    first.enter(req)
    expect(first.earlier(req, input, undefined)).to.equal(undefined)
    const decision = decisionOf('global', 9)
    first.counted(req, input, undefined, Promise.resolve(decision))
    expect(await second.earlier(req, input, undefined)).to.equal(decision)
    expect(elsewhere.earlier(req, input, undefined)).to.equal(undefined)
    // Another tenant is another key.
    expect(second.earlier(req, { tenant: 'u', route: 'GET /a' }, undefined)).to.equal(undefined)
  })

  it('a reused decision of several policies is the counted one of each, combined', async () => {
    const store = memoryStore()
    const both = createRequestCounts(createRateLimiter({ store, policies: [global, search] }))
    const searchOnly = createRequestCounts(createRateLimiter({ store, policies: [search] }))
    const req = {}
    const input = { tenant: 't', route: 'GET /search' }
    const searchDecision = decisionOf('search', 2)
    both.enter(req)
    both.counted(
      req,
      input,
      undefined,
      Promise.resolve(decisionOf('global', 9, [decisionOf('global', 9), searchDecision])),
    )
    expect(await searchOnly.earlier(req, input, undefined)).to.equal(searchDecision)
  })

  it('refuses a call counted in some of its keys but not all, or at another cost', () => {
    const store = memoryStore()
    const globalOnly = createRequestCounts(createRateLimiter({ store, policies: [global] }))
    const both = createRequestCounts(createRateLimiter({ store, policies: [global, search] }))
    const req = {}
    const input = { tenant: 't', route: 'GET /search' }
    globalOnly.enter(req)
    globalOnly.counted(req, input, 2, Promise.resolve(decisionOf('global', 8)))
    const partial = thrown(() => both.earlier(req, input, 2))
    expect(isFleetlimitError(partial, 'ERR_FLEETLIMIT_OPTION'), String(partial)).to.equal(true)
    expect((partial as { option: string }).option).to.equal('policies')
    expect((partial as Error).message).to.include('policy "global" counted it in an earlier rateLimit middleware')
    const cost = thrown(() =>
      createRequestCounts(createRateLimiter({ store, policies: [global] })).earlier(req, input, 3),
    )
    expect((cost as { option: string }).option).to.equal('cost')
    expect((cost as Error).message).to.include(
      'the cost an earlier rateLimit middleware counted this request at on policy "global" (2)',
    )
  })
})
