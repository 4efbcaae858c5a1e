import type { Decision } from '@fleetlimit/core'
import { rateLimitHeaders } from '@fleetlimit/core/http'
import { expect } from 'chai'

describe('rateLimitHeaders', () => {
  const decision: Decision = {
    allowed: false,
    limit: 10,
    remaining: 0,
    retryAfterMs: 1_001,
    resetMs: 9_500,
    source: 'store',
    policy: 'api',
  }
  const windows = new Map([['api', 60_000]])

  it('rounds Retry-After up to whole seconds, never below 1', () => {
    expect(rateLimitHeaders(decision, { standard: false, legacy: false, windows })).to.deep.equal({
      'retry-after': '2',
    })
    const tiny = { ...decision, retryAfterMs: 1 }
    expect(rateLimitHeaders(tiny, { standard: false, legacy: false, windows })['retry-after']).to.equal('1')
  })

  it('invents no numbers for a decision made failing open unlimited', () => {
    const open: Decision = { ...decision, allowed: true, retryAfterMs: 0, source: 'open' }
    expect(rateLimitHeaders(open, { standard: 'draft-8', legacy: true, windows })).to.deep.equal({})
  })
})
