import { type Decision, memoryStore, OptionError, StoreError } from '@fleetlimit/core'
import type { HttpRateLimitOptions } from '@fleetlimit/core/http'
import { expect } from 'chai'
import { createDecisionAnswer, storeFailure } from '../../../packages/core/src/http/decision-answer.js'
import { resolveHttpOptions } from '../../../packages/core/src/http/resolved-http-options.js'

const REQ = { url: '/x' }
type Req = typeof REQ
const answerOf = (options: HttpRateLimitOptions<Req>) =>
  createDecisionAnswer(
    resolveHttpOptions<Req, unknown>({ store: memoryStore(), name: 'api', headers: 'draft-6', ...options }),
  )

const decision = (allowed: boolean, extra: Partial<Decision> = {}): Decision => ({
  allowed,
  limit: 2,
  remaining: allowed ? 1 : 0,
  retryAfterMs: allowed ? 0 : 2_500,
  resetMs: 60_000,
  source: 'store',
  policy: 'api',
  ...extra,
})

describe('core/http/decision-answer: the outcome of a request’s decision', () => {
  it('admitted: through, with its RateLimit headers and the decision', async () => {
    const admitted = decision(true)
    expect(await answerOf({ limit: 2, window: '1m' })(admitted)).to.deep.equal({
      action: 'next',
      headers: {
        'ratelimit-limit': '2',
        'ratelimit-remaining': '1',
        'ratelimit-reset': '60',
        'ratelimit-policy': '2;w=60',
      },
      decision: admitted,
    })
  })

  it('denied, by default: statusCode, Retry-After in whole seconds rounded up, and the problem+json body', async () => {
    const denied = decision(false)
    const outcome = await answerOf({ limit: 2, window: '1m', statusCode: 418 })(denied)
    const body = JSON.stringify({
      type: 'https://iana.org/assignments/http-problem-types#quota-exceeded',
      title: 'Too Many Requests',
      status: 418,
      detail: 'Quota exceeded for policy "api"; retry in 3 s.',
      'violated-policies': ['api'],
      'retry-after': 3,
    })
    expect(outcome).to.deep.equal({
      action: 'respond',
      status: 418,
      headers: {
        'retry-after': '3',
        'ratelimit-limit': '2',
        'ratelimit-remaining': '0',
        // On a denial, draft-6's reset is the wait.
        'ratelimit-reset': '3',
        'ratelimit-policy': '2;w=60',
        'content-type': 'application/problem+json',
        'content-length': String(body.length),
      },
      body,
      decision: denied,
    })
  })

  it('denied, with onLimited and a message function: onLimited told first, then the message’s JSON', async () => {
    const denied = decision(false)
    const calls: string[] = []
    const answer = answerOf({
      limit: 2,
      window: '1m',
      onLimited: (req, d) => {
        expect([req, d]).to.deep.equal([REQ, denied])
        calls.push('onLimited')
      },
      message: (req, d) => {
        calls.push('message')
        return { url: req.url, wait: d.retryAfterMs }
      },
    })
    const outcome = await answer(denied, REQ)
    expect(calls).to.deep.equal(['onLimited', 'message'])
    expect(outcome).to.include({ action: 'respond', status: 429, body: '{"url":"/x","wait":2500}' })
    expect(outcome.headers).to.include({ 'content-type': 'application/json; charset=utf-8', 'content-length': '24' })
  })

  it('a shadow policy’s denial: onLimited told, and the request let through', async () => {
    const shadowed = decision(true, { shadowDenied: true })
    const told: Decision[] = []
    const answer = answerOf({ limit: 2, window: '1m', onLimited: (_req, d) => void told.push(d) })
    expect(await answer(shadowed, REQ)).to.include({ action: 'next', decision: shadowed })
    expect(told).to.deep.equal([shadowed])
  })

  it('denied by the in-flight policy alone: concurrencyStatusCode', async () => {
    const slot = decision(false, { policy: '2-in-flight', retryAfterMs: 0 })
    const busy = decision(false, { policy: '2-in-flight', retryAfterMs: 0, policies: [decision(true), slot] })
    const outcome = await answerOf({ limit: 2, window: '1m', concurrency: 2, concurrencyStatusCode: 503 })(busy)
    expect(outcome).to.include({ action: 'respond', status: 503 })
    expect(outcome.headers).to.include({ 'retry-after': '1' })
  })
})

describe('core/http/decision-answer: storeFailure', () => {
  it('a store error the policy fails closed on: 503 with the store’s wait as Retry-After', () => {
    const body = JSON.stringify({
      type: 'about:blank',
      title: 'Service Unavailable',
      status: 503,
      detail: 'The rate limiter cannot reach its store; retry shortly.',
    })
    expect(storeFailure(new StoreError('down', { retryAfterMs: 1_500 }))).to.deep.equal({
      action: 'respond',
      status: 503,
      headers: {
        'retry-after': '2',
        'content-type': 'application/problem+json',
        'content-length': String(body.length),
      },
      body,
      decision: undefined,
    })
  })

  it('any other error: thrown on, for the error policy', () => {
    const error = new OptionError('cost(req)', 0, 'a whole number')
    expect(() => storeFailure(error)).to.throw(error)
  })
})
