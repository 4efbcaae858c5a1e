// limitedFetch's adapt with several policies (an LLM API's requests and tokens per minute): each policy learns its
// own limit from the upstream's answers, fleet-wide, on the memory store and on a real Redis.
import type { OutgoingHttpHeaders } from 'node:http'
import {
  createRateLimiter,
  isFleetlimitError,
  type LearnedLimit,
  memoryStore,
  type RateLimiter,
  redisStore,
  type Store,
} from '@fleetlimit/core'
import { expect } from 'chai'
import type { Redis } from 'ioredis'
import { limitedFetch } from '../../packages/core/src/outbound/limited-fetch.js'
import { startStub } from '../support/quota-stub.js'
import { redisClient, uniquePrefix } from '../support/redis.js'

/** OpenAI's quota headers: requests and tokens per minute, and what is left of each. */
const openAi = (requests: number, tokens: number, tokensLeft = tokens - 1_200): OutgoingHttpHeaders => ({
  'x-ratelimit-limit-requests': String(requests),
  'x-ratelimit-remaining-requests': String(requests - 1),
  'x-ratelimit-reset-requests': '1s',
  'x-ratelimit-limit-tokens': String(tokens),
  'x-ratelimit-remaining-tokens': String(tokensLeft),
  'x-ratelimit-reset-tokens': '6s',
})

const cost = { rpm: 1, tpm: 1_200 }

for (const kind of ['memory', 'redis'] as const) {
  describe(`limitedFetch adapt with requests and tokens policies: two processes on the ${kind} store`, () => {
    let redis: Redis | undefined
    let stub: Awaited<ReturnType<typeof startStub>> | undefined
    before(() => {
      if (kind === 'redis') redis = redisClient()
    })
    after(() => redis?.quit())
    afterEach(async () => {
      await stub?.close()
      stub = undefined
    })

    /**
     * Two limiters of 60 requests and 100,000 tokens a minute and 5 calls in flight, sharing one store's windows,
     * and a third made on demand: a process that has cached nothing.
     */
    function fleet(): [RateLimiter, RateLimiter, () => RateLimiter] {
      const prefix = uniquePrefix()
      const shared = memoryStore()
      const storeOf = (): Store => (redis ? redisStore(redis, { prefix }) : shared)
      const make = () =>
        createRateLimiter({
          store: storeOf(),
          policies: [
            { name: 'rpm', limit: 60, window: '1m' },
            { name: 'tpm', limit: 100_000, window: '1m' },
            { name: 'slots', concurrency: 5 },
          ],
        })
      return [make(), make(), make]
    }
    async function call(limiter: RateLimiter, options: Partial<Parameters<typeof limitedFetch>[1]> = {}) {
      const response = await limitedFetch(limiter, { key: 'llm', cost, ...options })((stub as { url: string }).url)
      await response.text()
      return response.status
    }

    it("learns each policy's limit from one process's answers; the other holds to both, and peek shows each", async () => {
      stub = await startStub(() => ({ status: 200, headers: openAi(30, 50_000) }))
      const [one, two] = fleet()
      const heard: [string, LearnedLimit | undefined][] = []
      one.on('learned', (_key, learned, policy) => heard.push([policy, learned]))
      expect(await call(one)).to.equal(200)
      expect(heard.sort()).to.deep.equal([
        ['rpm', { limit: 30, source: 'headers' }],
        ['tpm', { limit: 50_000, source: 'headers' }],
      ])
      expect(await two.learned('llm', 'rpm')).to.deep.equal({ limit: 30, source: 'headers' })
      expect(await two.learned('llm', 'tpm')).to.deep.equal({ limit: 50_000, source: 'headers' })
      // The first policy by default; in-flight slots learn nothing.
      expect(await two.learned('llm')).to.deep.equal({ limit: 30, source: 'headers' })
      expect(await two.learned('llm', 'slots')).to.equal(undefined)
      const peek = await two.peek('llm')
      expect(peek.policies?.map((d) => [d.policy, d.limit, d.remaining, d.learned ?? null])).to.deep.equal([
        ['rpm', 30, 29, { limit: 30, source: 'headers' }],
        ['tpm', 50_000, 48_800, { limit: 50_000, source: 'headers' }],
        ['slots', 5, 5, null],
      ])
    })

    it('a learned tokens quota lowers the tokens policy only: calls wait for tokens, not requests', async () => {
      // 2,400 tokens a minute: two calls of 1,200; the requests quota is not stated.
      stub = await startStub(() => ({
        status: 200,
        headers: { 'x-ratelimit-limit-tokens': '2400', 'x-ratelimit-remaining-tokens': '1200' },
      }))
      const [one, two] = fleet()
      expect(await call(one)).to.equal(200)
      expect(await two.learned('llm', 'tpm')).to.deep.equal({ limit: 2_400, source: 'headers' })
      expect(await two.learned('llm', 'rpm')).to.equal(undefined)
      expect(await call(two, { maxWaitMs: '5s' })).to.equal(200)
      // The third call's 1,200 tokens do not fit the learned 2,400 before the window moves on.
      const third = await call(two, { maxWaitMs: '5s' }).catch((error: unknown) => error)
      expect(isFleetlimitError(third, 'ERR_FLEETLIMIT_TIMEOUT')).to.equal(true)
      expect(stub.arrivals).to.have.length(2)
      const peek = await one.peek('llm')
      expect(peek.policies?.slice(0, 2).map((d) => [d.policy, d.limit, d.remaining])).to.deep.equal([
        ['rpm', 60, 58],
        ['tpm', 2_400, 0],
      ])
    })

    it('never learns a limit above the configured one, and goes back to it when the upstream allows more', async () => {
      let answer = openAi(10, 6_000)
      stub = await startStub(() => ({ status: 200, headers: answer }))
      const [one, two] = fleet()
      const heard: [string, LearnedLimit | undefined][] = []
      one.on('learned', (_key, learned, policy) => heard.push([policy, learned]))
      expect(await call(one)).to.equal(200)
      expect(heard.sort()).to.deep.equal([
        ['rpm', { limit: 10, source: 'headers' }],
        ['tpm', { limit: 6_000, source: 'headers' }],
      ])
      // Above what the limiter was configured with: each policy is back to its own.
      answer = openAi(1_000, 10_000_000)
      expect(await call(one)).to.equal(200)
      expect(heard.slice(2).sort()).to.deep.equal([
        ['rpm', undefined],
        ['tpm', undefined],
      ])
      expect([await two.learned('llm', 'rpm'), await two.learned('llm', 'tpm')]).to.deep.equal([undefined, undefined])
      const peek = await two.peek('llm')
      expect(peek.policies?.map((d) => d.limit)).to.deep.equal([60, 100_000, 5])
    })

    it("'aimd': a 429 cuts every rate policy to 0.7 of what it held, for both processes", async () => {
      stub = await startStub((n) => (n === 3 ? { status: 429, headers: { 'retry-after': '0' } } : { status: 200 }))
      const [one, two, third] = fleet()
      const options = { adapt: 'aimd', maxRetries: 0 } as const
      expect([await call(one, options), await call(two, options), await call(one, options)]).to.deep.equal([
        200, 200, 429,
      ])
      // The refused call was admitted with 3 requests and 3,600 tokens in the windows. (The second process read
      // "nothing learned" less than a second ago: a process that cached nothing reads the store.)
      for (const limiter of [one, third()]) {
        expect(await limiter.learned('llm', 'rpm')).to.deep.equal({ limit: 2, source: 'aimd' })
        expect(await limiter.learned('llm', 'tpm')).to.deep.equal({ limit: 2_520, source: 'aimd' })
      }
    })

    it('an admission refunded for a limit cut while it waited gives its in-flight slot back too', async () => {
      stub = await startStub(() => ({ status: 200 }))
      const [one] = fleet()
      for (let i = 0; i < 3; i++) await one.consume('llm', { cost })
      // Another process cuts the requests limit to 2 while this call waits: its admission (the fourth request) is
      // over the new limit, so it is refunded and asked again, and cannot be admitted within its budget.
      let cut = false
      const waiting = {
        ...one,
        async acquire(...args: Parameters<RateLimiter['acquire']>) {
          const decision = await one.acquire(...args)
          if (!cut) {
            cut = true
            await one.learn('llm', { source: 'headers', limit: 2, policy: 'rpm' })
          }
          return decision
        },
      }
      const outcome = await limitedFetch(waiting, { key: 'llm', cost, maxWaitMs: '1s' })(stub.url).catch((e) => e)
      expect(isFleetlimitError(outcome, 'ERR_FLEETLIMIT_TIMEOUT')).to.equal(true)
      expect(stub.arrivals).to.have.length(0)
      const peek = await one.peek('llm')
      expect(peek.policies?.map((d) => [d.policy, d.limit, d.remaining])).to.deep.equal([
        ['rpm', 2, 0],
        ['tpm', 100_000, 96_400],
        // The three consumed above still hold theirs; the refunded admission's is free.
        ['slots', 5, 2],
      ])
    })

    it('names the quotas in `quotas`: a tokens quota sent as an IETF policy of another name', async () => {
      stub = await startStub(() => ({
        status: 200,
        headers: { 'ratelimit-policy': '"calls";q=20;w=60, "spend";q=9000;w=60', ratelimit: '"spend";r=7800;t=30' },
      }))
      const [one, two] = fleet()
      expect(await call(one, { quotas: { calls: 'rpm', spend: 'tpm' } })).to.equal(200)
      expect([await two.learned('llm', 'rpm'), await two.learned('llm', 'tpm')]).to.deep.equal([
        { limit: 20, source: 'headers' },
        { limit: 9_000, source: 'headers' },
      ])
    })
  })
}
