import { stackHeaders } from '@fleetlimit/core/http'
import { expect } from 'chai'

/** A response's headers as a framework reports them. */
const on = (headers: Record<string, unknown>) => (name: string) => headers[name]

describe('stackHeaders: a limiter after another on one response', () => {
  it('with nothing there, the headers as they are', () => {
    const headers = { 'ratelimit-policy': '"a";q=5;w=60', ratelimit: '"a";r=4;t=60' }
    expect(stackHeaders(headers, on({}))).to.equal(headers)
    expect(stackHeaders(headers, on({ ratelimit: '', 'ratelimit-policy': '' })), "Koa 2's absent header").to.equal(
      headers,
    )
  })

  it("draft-8: this limiter's list items after the others', admitted or denied", () => {
    const before = on({ 'ratelimit-policy': '"app";q=100;w=60', ratelimit: '"app";r=97;t=60' })
    expect(
      stackHeaders({ 'ratelimit-policy': '"search";q=10;w=10', ratelimit: '"search";r=9;t=10' }, before),
    ).to.deep.equal({
      'ratelimit-policy': '"app";q=100;w=60, "search";q=10;w=10',
      ratelimit: '"app";r=97;t=60, "search";r=9;t=10',
    })
    const denial = {
      'retry-after': '10',
      'ratelimit-policy': '"search";q=10;w=10',
      ratelimit: '"search";r=0;t=10',
      'content-type': 'application/problem+json',
    }
    expect(stackHeaders(denial, before)).to.deep.equal({
      ...denial,
      'ratelimit-policy': '"app";q=100;w=60, "search";q=10;w=10',
      ratelimit: '"app";r=97;t=60, "search";r=0;t=10',
    })
  })

  it('draft-8 items from an array of lines, as Node may report them', () => {
    const before = on({ ratelimit: ['"a";r=1;t=5', '"b";r=2;t=5'] })
    expect(stackHeaders({ ratelimit: '"c";r=3;t=5' }, before).ratelimit).to.equal(
      '"a";r=1;t=5, "b";r=2;t=5, "c";r=3;t=5',
    )
  })

  it("draft-7: RateLimit-Policy lists both; RateLimit keeps the one with fewer left, or the denier's", () => {
    const before = on({ 'ratelimit-policy': '100;w=60', ratelimit: 'limit=100, remaining=3, reset=60' })
    const admitted = { 'ratelimit-policy': '10;w=10', ratelimit: 'limit=10, remaining=9, reset=10' }
    expect(stackHeaders(admitted, before)).to.deep.equal({
      'ratelimit-policy': '100;w=60, 10;w=10',
      ratelimit: 'limit=100, remaining=3, reset=60',
    })
    const tighter = { 'ratelimit-policy': '10;w=10', ratelimit: 'limit=10, remaining=2, reset=10' }
    expect(stackHeaders(tighter, before).ratelimit).to.equal('limit=10, remaining=2, reset=10')
    const tie = { 'ratelimit-policy': '10;w=10', ratelimit: 'limit=10, remaining=3, reset=10' }
    expect(stackHeaders(tie, before).ratelimit, 'the first on a tie').to.equal('limit=100, remaining=3, reset=60')
    const denial = { 'retry-after': '7', 'ratelimit-policy': '10;w=10', ratelimit: 'limit=10, remaining=0, reset=7' }
    expect(stackHeaders(denial, before).ratelimit).to.equal('limit=10, remaining=0, reset=7')
  })

  it('draft-6 and X-RateLimit-*: limit, remaining and reset stay together, of the binding limiter', () => {
    const before = on({
      'ratelimit-limit': 100,
      'ratelimit-remaining': '3',
      'ratelimit-reset': '60',
      'ratelimit-policy': '100;w=60',
      'x-ratelimit-limit': '100',
      'x-ratelimit-remaining': '3',
      'x-ratelimit-reset': '1700000060',
    })
    const admitted = {
      'ratelimit-limit': '10',
      'ratelimit-remaining': '9',
      'ratelimit-reset': '10',
      'ratelimit-policy': '10;w=10',
      'x-ratelimit-limit': '10',
      'x-ratelimit-remaining': '9',
      'x-ratelimit-reset': '1700000010',
    }
    expect(stackHeaders(admitted, before)).to.deep.equal({
      'ratelimit-limit': '100',
      'ratelimit-remaining': '3',
      'ratelimit-reset': '60',
      'ratelimit-policy': '100;w=60, 10;w=10',
      'x-ratelimit-limit': '100',
      'x-ratelimit-remaining': '3',
      'x-ratelimit-reset': '1700000060',
    })
    const denial = { ...admitted, 'retry-after': '10', 'ratelimit-remaining': '0', 'x-ratelimit-remaining': '0' }
    expect(stackHeaders(denial, before)).to.deep.equal({ ...denial, 'ratelimit-policy': '100;w=60, 10;w=10' })
  })

  it('items of another standard are not mixed in: the later limiter’s replace them', () => {
    const before = on({ 'ratelimit-policy': '100;w=60', ratelimit: 'limit=100, remaining=3, reset=60' })
    const draft8 = { 'ratelimit-policy': '"search";q=10;w=10', ratelimit: '"search";r=9;t=10' }
    expect(stackHeaders(draft8, before)).to.deep.equal(draft8)
  })
})
