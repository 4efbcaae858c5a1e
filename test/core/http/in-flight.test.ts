import { createRateLimiter, type Decision, definePolicy, memoryStore } from '@fleetlimit/core'
import { createHttpLimiter, type HttpRateLimitOptions } from '@fleetlimit/core/http'
import { expect } from 'chai'
import { answeredDenial, deniedInFlightOnly } from '../../../packages/core/src/http/in-flight.js'

const FRAMEWORK = { name: 'Test', trustProxyHint: '', trustAllHint: '' }
const policiesOf = (options: HttpRateLimitOptions<object>) =>
  createHttpLimiter<object>({ store: memoryStore(), ...options }, FRAMEWORK).limiter.policies

const decision = (policy: string, allowed: boolean, retryAfterMs: number, extra: Partial<Decision> = {}) => ({
  allowed,
  limit: 2,
  remaining: allowed ? 1 : 0,
  retryAfterMs,
  resetMs: 60_000,
  source: 'store' as const,
  policy,
  ...extra,
})
const inFlight = new Set(['2-in-flight'])

describe('core/http: the concurrency option’s in-flight policy', () => {
  it('alone: `<n>-in-flight`, or the inline name and settings, with its slot life', () => {
    const [alone] = policiesOf({ concurrency: 3 })
    expect(alone).to.include({ name: '3-in-flight', concurrency: 3, limit: 3, window: 60_000, scope: 'route' })
    const [named] = policiesOf({ concurrency: 3, name: 'uploads', scope: 'tenant', slotTtlMs: '5m' })
    expect(named).to.include({ name: 'uploads', concurrency: 3, slotTtlMs: 300_000, scope: 'tenant' })
  })

  it('after the rate policy, whose settings it follows so that nothing else changes', () => {
    const [rate, slots] = policiesOf({
      name: 'api',
      limit: 10,
      window: '1m',
      scope: 'tenant',
      onStoreError: 'fail-open',
      timeoutMs: 250,
      concurrency: 4,
    })
    expect(rate).to.include({ name: 'api', limit: 10 })
    expect(slots).to.include({
      name: '4-in-flight',
      concurrency: 4,
      scope: 'tenant',
      onStoreError: 'fail-open',
      timeoutMs: 250,
      shadow: false,
    })
    // Beside several: fail-open and per tenant only if all are; the shortest deadline.
    const policies = [
      definePolicy({ name: 'a', limit: 5, window: '1s', scope: 'tenant', onStoreError: 'fail-open', timeoutMs: 50 }),
      definePolicy({ name: 'b', limit: 50, window: '1m', timeoutMs: 300 }),
    ]
    const [, , added] = policiesOf({ policies, concurrency: 2 })
    expect(added).to.include({ name: '2-in-flight', scope: 'route', onStoreError: 'fail-closed', timeoutMs: 50 })
  })

  it('a limiter of the user’s own with an in-flight policy: its admissions are settled, to release their slots', () => {
    const limiter = createRateLimiter({ store: memoryStore(), policies: [definePolicy({ concurrency: 2 })] })
    expect(createHttpLimiter<object>({ limiter }, FRAMEWORK).settles).to.equal(true)
    const rates = createRateLimiter({ store: memoryStore(), limit: 5, window: '1m' })
    expect(createHttpLimiter<object>({ limiter: rates }, FRAMEWORK).settles).to.equal(false)
  })

  it('a function of the request: policy `in-flight` at the largest concurrency, each request naming its own', () => {
    const [, perRequest] = policiesOf({ limit: 10, window: '1m', concurrency: () => 2 })
    expect(perRequest).to.include({ name: 'in-flight', concurrency: 1_000_000 })
  })
})

describe('core/http: a denial by an in-flight policy, as the client is told it', () => {
  const INFO = {
    ip: '192.0.2.1',
    method: 'GET',
    routePattern: '/x',
    forwardedFor: false,
    trustProxy: 'none' as const,
    peerAddress: '192.0.2.1',
  }

  it('a message function gets the wait the headers tell; the handler and onLimited the limiter’s', async () => {
    const limited: Decision[] = []
    const http = createHttpLimiter<object>(
      {
        // A clock that stands still: the slot's wait is exact.
        store: memoryStore({ clock: () => 1_000_000 }),
        concurrency: 1,
        message: (_req, d) => ({ wait: d.retryAfterMs }),
        onLimited: (_req, d) => {
          limited.push(d)
        },
      },
      FRAMEWORK,
    )
    expect((await http.handle({}, INFO)).action).to.equal('next')
    const denied = await http.handle({}, INFO)
    if (denied.action !== 'respond') throw new Error('expected a denial')
    expect(denied.status).to.equal(429)
    expect(denied.headers['retry-after']).to.equal('1')
    expect(denied.body).to.equal('{"wait":1000}')
    expect(denied.decision?.retryAfterMs, 'until the slot expires').to.equal(60_000)
    expect(limited[0]?.retryAfterMs).to.equal(60_000)
  })

  it('alone: the wait until its soonest slot expires becomes 1 s, or less when sooner', () => {
    expect(answeredDenial(decision('2-in-flight', false, 59_000), inFlight).retryAfterMs).to.equal(1_000)
    expect(answeredDenial(decision('2-in-flight', false, 400), inFlight).retryAfterMs).to.equal(400)
    expect(answeredDenial(decision('api', false, 59_000), inFlight).retryAfterMs, 'a rate').to.equal(59_000)
    expect(deniedInFlightOnly(decision('2-in-flight', false, 59_000), inFlight)).to.equal(true)
    expect(deniedInFlightOnly(decision('api', false, 59_000), inFlight)).to.equal(false)
  })

  it('with a rate policy: the longer wait, and the policy that sets it, lead', () => {
    const both = {
      ...decision('2-in-flight', false, 59_000),
      policies: [decision('api', false, 5_000), decision('2-in-flight', false, 59_000)],
    }
    const told = answeredDenial(both, inFlight)
    expect(told).to.include({ allowed: false, policy: 'api', retryAfterMs: 5_000 })
    expect(told.policies?.map((d) => d.retryAfterMs)).to.deep.equal([5_000, 1_000])
    expect(deniedInFlightOnly(both, inFlight)).to.equal(false)

    const slotsOnly = {
      ...decision('2-in-flight', false, 59_000),
      policies: [decision('api', true, 0), decision('2-in-flight', false, 59_000)],
    }
    expect(answeredDenial(slotsOnly, inFlight)).to.include({ policy: '2-in-flight', retryAfterMs: 1_000 })
    expect(deniedInFlightOnly(slotsOnly, inFlight)).to.equal(true)
    // A shadow rate policy that would deny decides nothing.
    const shadowRate = {
      ...slotsOnly,
      policies: [decision('api', false, 5_000, { shadow: true }), decision('2-in-flight', false, 59_000)],
    }
    expect(deniedInFlightOnly(shadowRate, inFlight)).to.equal(true)
  })
})
