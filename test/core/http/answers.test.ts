import { expect } from 'chai'
import sinon from 'sinon'
import {
  createDefaultDenial,
  customBody,
  factoryMisuse,
  NEXT,
  quotaExceededBody,
  requestError,
  requestErrorBody,
  respond,
  STORE_UNAVAILABLE,
  sized,
} from '../../../packages/core/src/http/answers.js'
import type { Decision } from '../../../packages/core/src/limiter/decision.js'

const denied = (policy: string, retryAfterMs: number, fields: Partial<Decision> = {}): Decision => ({
  allowed: false,
  limit: 10,
  remaining: 0,
  retryAfterMs,
  resetMs: 1_000,
  source: 'store',
  policy,
  ...fields,
})

describe('answers', () => {
  it('the default denial is an RFC 9457 quota-exceeded problem naming the violated, enforced policies', () => {
    const api = denied('api', 1_200)
    const trial = denied('trial', 5_000, { shadow: true })
    const day = { ...denied('day', 0), allowed: true }
    const body = quotaExceededBody({ ...api, policies: [api, trial, day] }, 429)
    expect(body.contentType).to.equal('application/problem+json')
    expect(JSON.parse(body.body)).to.deep.equal({
      type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
      title: 'Too Many Requests',
      status: 429,
      detail: 'Quota exceeded for policy "api"; retry in 2 s.',
      'violated-policies': ['api'],
      'retry-after': 2,
    })
  })

  it('the store-failure 503, a user’s message as text or JSON, and a request error’s 500', () => {
    expect(JSON.parse(STORE_UNAVAILABLE.body)).to.deep.equal({
      type: 'about:blank',
      title: 'Service Unavailable',
      status: 503,
      detail: 'The rate limiter cannot reach its store; retry shortly.',
    })
    expect(STORE_UNAVAILABLE.length).to.equal(String(Buffer.byteLength(STORE_UNAVAILABLE.body)))
    expect(customBody('Slow down')).to.deep.equal({ contentType: 'text/plain; charset=utf-8', body: 'Slow down' })
    expect(customBody({ error: 'slow' })).to.deep.equal({
      contentType: 'application/json; charset=utf-8',
      body: '{"error":"slow"}',
    })
    expect(JSON.parse(requestErrorBody('bad tenant', 'ERR_FLEETLIMIT_OPTION').body)).to.deep.equal({
      type: 'about:blank',
      title: 'Internal Server Error',
      status: 500,
      detail: 'bad tenant',
      code: 'ERR_FLEETLIMIT_OPTION',
    })
    expect(JSON.parse(requestErrorBody('x').body)).to.not.have.property('code')
  })

  it('sized counts bytes, not characters; respond completes the caller’s headers', () => {
    const body = sized({ contentType: 'text/plain', body: 'é' })
    expect(body.length).to.equal('2')
    const decision = denied('api', 100)
    expect(respond(429, { 'retry-after': '1' }, body, decision)).to.deep.equal({
      action: 'respond',
      status: 429,
      headers: { 'retry-after': '1', 'content-type': 'text/plain', 'content-length': '2' },
      body: 'é',
      decision,
    })
    expect(NEXT).to.deep.equal({ action: 'next', headers: {}, decision: undefined })
    expect(Object.isFrozen(NEXT)).to.equal(true)
  })

  it('createDefaultDenial makes a body once per policy and whole second, for its status', () => {
    const denial = createDefaultDenial(503)
    const first = denial(denied('api', 1_100))
    expect(denial(denied('api', 1_900))).to.equal(first)
    expect(denial(denied('api', 2_100))).to.not.equal(first)
    expect(denial(denied('other', 1_100))).to.not.equal(first)
    expect(JSON.parse(first.body)).to.include({ status: 503, 'retry-after': 2 })
  })

  it('requestError names the invalid option, once per kind', () => {
    const body = requestError('ERR_FLEETLIMIT_OPTION', 'cost')
    expect(requestError('ERR_FLEETLIMIT_OPTION', 'cost')).to.equal(body)
    expect(JSON.parse(body.body).detail).to.equal('The rate limiter could not decide on this request: invalid `cost`.')
    expect(JSON.parse(requestError(undefined, undefined).body).detail).to.equal(
      'The rate limiter could not decide on this request.',
    )
  })

  it('factoryMisuse answers a 500 naming the fix, and warns once per app', () => {
    const warn = sinon.stub(console, 'warn')
    try {
      const app = {}
      const outcome = factoryMisuse(app)
      factoryMisuse(app)
      factoryMisuse(undefined)
      expect(outcome.status).to.equal(500)
      expect(JSON.parse(outcome.body)).to.include({ code: 'ERR_FLEETLIMIT_OPTION' })
      expect(warn.getCalls().map((call) => call.args[0])).to.deep.equal([
        "fleetlimit: rateLimit is a factory: call it with options, app.use(rateLimit({ limit: 100, window: '1m' })).",
        "fleetlimit: rateLimit is a factory: call it with options, app.use(rateLimit({ limit: 100, window: '1m' })).",
      ])
    } finally {
      warn.restore()
    }
  })
})
