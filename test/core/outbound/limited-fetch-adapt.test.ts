import type { OutgoingHttpHeaders } from 'node:http'
import { createRateLimiter, type LearnedLimit, memoryStore, type RateLimiter } from '@fleetlimit/core'
import { expect } from 'chai'
import { limitedFetch } from '../../../packages/core/src/outbound/limited-fetch.js'
import { optionErrorOf } from '../../support/option-error.js'
import { quotaHeaders, startStub } from '../../support/quota-stub.js'

describe('limitedFetch adapt (memory store, real HTTP upstream)', () => {
  let stub: Awaited<ReturnType<typeof startStub>> | undefined
  afterEach(async () => {
    await stub?.close()
    stub = undefined
  })
  const make = (limit = 10) => createRateLimiter({ store: memoryStore(), limit, window: '1s', name: 'up' })

  async function call(limiter: RateLimiter, options: Parameters<typeof limitedFetch>[1] = { key: 'stub' }) {
    const response = await limitedFetch(limiter, options)((stub as { url: string }).url)
    await response.text()
    return response.status
  }

  it("headers (the default): a lower stated quota becomes the key's limit, which peek and the event show", async () => {
    stub = await startStub(() => ({ status: 200, headers: quotaHeaders(3, 2) }))
    const limiter = make()
    const heard: (LearnedLimit | undefined)[] = []
    limiter.on('learned', (_key, learned) => heard.push(learned))
    expect(await call(limiter)).to.equal(200)
    const peek = await limiter.peek('stub')
    expect([peek.limit, peek.remaining, peek.learned]).to.deep.equal([3, 2, { limit: 3, source: 'headers' }])
    expect(heard).to.deep.equal([{ limit: 3, source: 'headers' }])
    // The next calls are admitted under 3: the fourth waits for the window.
    const consumed = await limiter.consume('stub', { limit: 3 })
    expect(consumed.remaining).to.equal(1)
  })

  it('never learns a limit above the configured one', async () => {
    stub = await startStub(() => ({
      status: 200,
      headers: { 'x-ratelimit-limit': '100', 'x-ratelimit-remaining': '99' },
    }))
    const limiter = make()
    expect(await call(limiter)).to.equal(200)
    expect(await limiter.learned('stub')).to.equal(undefined)
    expect((await limiter.peek('stub')).limit).to.equal(10)
  })

  it('an answer that says none is left pauses the key fleet-wide until the reset, whatever its status', async () => {
    stub = await startStub(() => ({ status: 200, headers: quotaHeaders(5, 0, 30) }))
    const store = memoryStore()
    const [one, two] = [0, 1].map(() => createRateLimiter({ store, limit: 10, window: '1s', name: 'up' })) as [
      RateLimiter,
      RateLimiter,
    ]
    expect(await call(one)).to.equal(200)
    const denied = await two.consume('stub')
    expect(denied.allowed).to.equal(false)
    expect(denied.retryAfterMs).to.be.within(29_000, 30_000)
  })

  it('a 429 whose headers say when the quota resets is paused for and retried, as with Retry-After', async () => {
    stub = await startStub((n) => (n === 1 ? { status: 429, headers: quotaHeaders(5, 0, 0) } : { status: 200 }))
    const limiter = make()
    expect(await call(limiter)).to.equal(200)
    expect(stub.arrivals).to.have.length(2)
  })

  it('aimd: a 429 cuts the key limit to 0.7 of what the window held; no quota header is read', async () => {
    stub = await startStub((n) =>
      n === 3 ? { status: 429, headers: { 'retry-after': '0', ...quotaHeaders(1, 1) } } : { status: 200 },
    )
    const limiter = make()
    const options = { key: 'stub', adapt: 'aimd', maxRetries: 0 } as const
    expect([await call(limiter, options), await call(limiter, options), await call(limiter, options)]).to.deep.equal([
      200, 200, 429,
    ])
    // The third call was admitted with 3 units in the window: floor(3 × 0.7).
    expect(await limiter.learned('stub')).to.deep.equal({ limit: 2, source: 'aimd' })
    expect((await limiter.peek('stub')).learned).to.deep.equal({ limit: 2, source: 'aimd' })
  })

  it('false: learns nothing from headers, and still pauses on Retry-After', async () => {
    stub = await startStub(() => ({ status: 200, headers: quotaHeaders(3, 0, 30) }))
    const limiter = make()
    expect(await call(limiter, { key: 'stub', adapt: false })).to.equal(200)
    expect(await limiter.learned('stub')).to.equal(undefined)
    expect((await limiter.consume('stub')).allowed).to.equal(true)
  })

  it('ignores hostile quota headers: no crash, nothing learned, the answer handed over', async () => {
    const hostile = [
      { 'ratelimit-policy': `"a";q=1;w=1,${'x'.repeat(10_000)}`, ratelimit: `"a";r=0;t=1,${'y'.repeat(2_000)}` },
      { 'x-ratelimit-limit': '-1', 'x-ratelimit-remaining': '-1', 'x-ratelimit-reset': '-5' },
      { 'x-ratelimit-limit': 'NaN', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': '1e999' },
      { 'x-ratelimit-limit': '99999999999999999999999', 'x-ratelimit-reset-requests': '9999999h' },
      { ratelimit: '"a";r=0;t=99999999999999', 'ratelimit-policy': '"a";q=0.5;w=-1' },
    ]
    stub = await startStub((n) => ({ status: 200, headers: hostile[(n - 1) % hostile.length] as OutgoingHttpHeaders }))
    const limiter = make()
    for (let i = 0; i < hostile.length; i++) expect(await call(limiter)).to.equal(200)
    expect(await limiter.learned('stub')).to.equal(undefined)
    expect((await limiter.consume('stub')).allowed).to.equal(true)
  })

  it('refuses an adapt it cannot do, at construction', () => {
    const limiter = make()
    expect(optionErrorOf(() => limitedFetch(limiter, { key: 'k', adapt: 'yes' as never })).message).to.equal(
      "fleetlimit: invalid option `adapt`: got \"yes\"; expected 'headers' (the default), 'aimd' or false.",
    )
    // Several rate policies: each learns its own limit, and 'aimd' cuts each; in-flight slots learn none.
    const several = createRateLimiter({
      policies: [
        { limit: 5, window: '1s', name: 'a' },
        { limit: 50, window: '1m', name: 'b' },
      ],
    })
    expect(limitedFetch(several, { key: 'k', adapt: 'aimd' })).to.be.a('function')
    const slots = createRateLimiter({ concurrency: 2, name: 'slots' })
    expect(optionErrorOf(() => limitedFetch(slots, { key: 'k', adapt: 'aimd' })).option).to.equal('adapt')
    expect(optionErrorOf(() => limitedFetch(slots, { key: 'k', quotas: { requests: 'slots' } })).message).to.equal(
      'fleetlimit: invalid option `quotas`: got an object; expected a limiter with a rate policy ' +
        "(in-flight slots and calendar periods learn no limit), and adapt: 'headers'.",
    )
    expect(optionErrorOf(() => limitedFetch(several, { key: 'k', quotas: { tokens: 'c' } })).option).to.equal(
      'quotas.tokens',
    )
    expect(
      optionErrorOf(() => limitedFetch(several, { key: 'k', adapt: false, quotas: { tokens: 'b' } })).option,
    ).to.equal('quotas')
    expect(limitedFetch(several, { key: 'k' })).to.be.a('function')
  })
})
