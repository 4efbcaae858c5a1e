import { createRateLimiter, type Decision, definePolicy, memoryStore, type RateLimiter } from '@fleetlimit/core'
import { expect } from 'chai'
import { limitedFetch } from '../../../packages/core/src/outbound/limited-fetch.js'
import { startHttpStub } from '../../support/http-stub.js'

type ReleaseResult = Awaited<ReturnType<RateLimiter['release']>>

const usage = (tokens: number) => JSON.stringify({ usage: { total_tokens: tokens } })
const tokensOf = async (response: Response) =>
  ((await response.json()) as { usage: { total_tokens: number } }).usage.total_tokens

// An LLM API's quotas: requests and tokens per minute, and one call in flight (so a slot held shows at once).
const policies = [
  definePolicy({ name: 'rpm', limit: 100, window: '1m' }),
  definePolicy({ name: 'tpm', limit: 10_000, window: '1m' }),
  definePolicy({ name: 'parallel', concurrency: 1 }),
]

describe('limitedFetch with an in-flight policy and settle (memory store, real HTTP upstream)', () => {
  let stub: Awaited<ReturnType<typeof startHttpStub>> | undefined
  afterEach(async () => {
    await stub?.close()
    stub = undefined
  })

  /**
   * A limiter of the three policies, as limitedFetch sees it: each release() it makes is kept, so a test can wait
   * for the one that follows the end of a body (made off the caller's path).
   */
  function limiterWithReleases() {
    const limiter = createRateLimiter({ store: memoryStore(), policies })
    const releases: Promise<ReleaseResult>[] = []
    let released: () => void = () => {}
    const wrapper = {
      ...limiter,
      release(decision: Decision) {
        const result = limiter.release(decision)
        releases.push(result)
        released()
        return result
      },
    }
    /** The n-th release (from 1), once made and answered. */
    const release = async (n: number) => {
      while (releases.length < n) await new Promise<void>((resolve) => (released = resolve))
      return releases[n - 1]
    }
    /** Each policy's remaining units (for `parallel`: free slots) now. */
    const remaining = async () => {
      const peek = await limiter.peek('llm')
      return Object.fromEntries((peek.policies ?? []).map((d) => [d.policy, d.remaining]))
    }
    return { limiter, wrapper, releases, release, remaining }
  }

  it('holds the slot until the caller has read the body to its end, then gives it back', async () => {
    stub = await startHttpStub((_, __, res) => res.end('the answer'))
    const { wrapper, releases, release, remaining } = limiterWithReleases()
    const response = await limitedFetch(wrapper, { key: 'llm' })(stub.url)
    expect(await remaining()).to.deep.equal({ rpm: 99, tpm: 9_999, parallel: 0 })
    expect(releases).to.have.length(0)
    expect(await response.text()).to.equal('the answer')
    expect(await release(1)).to.deep.equal({ slots: 1, outcome: 'released' })
    expect(await remaining()).to.deep.equal({ rpm: 99, tpm: 9_999, parallel: 1 })
  })

  it('gives the slot back when the caller cancels the body, while the upstream is still sending it', async () => {
    let finish: () => void = () => {}
    stub = await startHttpStub((_, __, res) => {
      res.write('the first part')
      finish = () => res.end()
    })
    const { wrapper, release, remaining } = limiterWithReleases()
    const response = await limitedFetch(wrapper, { key: 'llm' })(stub.url)
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    expect(new TextDecoder().decode((await reader.read()).value)).to.equal('the first part')
    expect((await remaining()).parallel).to.equal(0)
    await reader.cancel()
    expect(await release(1)).to.deep.equal({ slots: 1, outcome: 'released' })
    expect((await remaining()).parallel).to.equal(1)
    finish()
  })

  it('gives the slot back before rejecting when the fetch throws (the connection dropped)', async () => {
    stub = await startHttpStub((_, req) => req.socket.destroy())
    const { wrapper, releases, remaining } = limiterWithReleases()
    const error = await limitedFetch(wrapper, { key: 'llm' })(stub.url).catch((e: unknown) => e)
    expect(error).to.be.instanceOf(TypeError)
    expect(releases).to.have.length(1)
    expect(await releases[0]).to.deep.equal({ slots: 1, outcome: 'released' })
    expect(await remaining()).to.deep.equal({ rpm: 99, tpm: 9_999, parallel: 1 })
  })

  it('gives a retried 429’s slot back before the retry, which takes the one slot again', async () => {
    stub = await startHttpStub((n, _, res) => {
      if (n === 1) res.writeHead(429, { 'retry-after': '0' }).end('slow down')
      else res.end('done')
    })
    const { wrapper, release, remaining } = limiterWithReleases()
    // The retry can only be admitted through the first attempt's release: a slot lives 60 s.
    const response = await limitedFetch(wrapper, { key: 'llm', maxWaitMs: '5s' })(stub.url)
    expect([response.status, stub.received()]).to.deep.equal([200, 2])
    expect(await release(1)).to.deep.equal({ slots: 1, outcome: 'released' })
    expect((await remaining()).parallel).to.equal(0)
    expect(await response.text()).to.equal('done')
    expect(await release(2)).to.deep.equal({ slots: 1, outcome: 'released' })
    expect(await remaining()).to.deep.equal({ rpm: 98, tpm: 9_998, parallel: 1 })
  })

  it('settles the tokens to the usage in the body, which the caller still reads whole', async () => {
    stub = await startHttpStub((_, __, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(usage(137)),
    )
    const { wrapper, release, remaining } = limiterWithReleases()
    const seen: number[] = []
    const llm = limitedFetch(wrapper, {
      key: 'llm',
      cost: { rpm: 1, tpm: 500 },
      settle: async (response) => {
        const tokens = await tokensOf(response)
        seen.push(tokens)
        return { tpm: tokens }
      },
    })
    const response = await llm(stub.url, { method: 'POST', body: '{"max_tokens":500}' })
    expect(await response.json()).to.deep.equal({ usage: { total_tokens: 137 } })
    // The slot comes back once the true cost is recorded.
    await release(1)
    expect(seen).to.deep.equal([137])
    expect(await remaining()).to.deep.equal({ rpm: 99, tpm: 10_000 - 137, parallel: 1 })
  })

  it('hands a streamed answer over at once: the settle reads its copy as the caller reads the original', async () => {
    let finish: () => void = () => {}
    stub = await startHttpStub((_, __, res) => {
      res.write('{"usage":')
      finish = () => res.end('{"total_tokens":20}}')
    })
    const { wrapper, release, remaining } = limiterWithReleases()
    const llm = limitedFetch(wrapper, {
      key: 'llm',
      cost: { tpm: 300 },
      settle: async (r) => ({ tpm: await tokensOf(r) }),
    })
    const response = await llm(stub.url)
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    expect(new TextDecoder().decode((await reader.read()).value)).to.equal('{"usage":')
    expect(await remaining()).to.deep.equal({ rpm: 99, tpm: 9_700, parallel: 0 })
    finish()
    let rest = ''
    for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
      rest += new TextDecoder().decode(chunk.value)
    }
    expect(rest).to.equal('{"total_tokens":20}}')
    await release(1)
    expect(await remaining()).to.deep.equal({ rpm: 99, tpm: 9_980, parallel: 1 })
  })

  it('settles up when the call cost more than its estimate: later calls wait for the extra', async () => {
    stub = await startHttpStub((_, __, res) => res.end(usage(9_800)))
    const { wrapper, release, remaining } = limiterWithReleases()
    const llm = limitedFetch(wrapper, {
      key: 'llm',
      cost: { tpm: 1_000 },
      settle: async (r) => ({ tpm: await tokensOf(r) }),
    })
    await (await llm(stub.url)).arrayBuffer()
    await release(1)
    expect(await remaining()).to.deep.equal({ rpm: 99, tpm: 200, parallel: 1 })
    const next = await wrapper.consume('llm', { cost: { tpm: 1_000 } })
    expect([next.allowed, next.policy]).to.deep.equal([false, 'tpm'])
  })

  it('keeps the estimate and still frees the slot when settle throws; the error goes to onSettleError', async () => {
    stub = await startHttpStub((_, __, res) => res.writeHead(500).end('upstream broke'))
    const { wrapper, release, remaining } = limiterWithReleases()
    const errors: unknown[] = []
    const llm = limitedFetch(wrapper, {
      key: 'llm',
      cost: { tpm: 500 },
      settle: async (r) => ({ tpm: await tokensOf(r) }),
      onSettleError: (error) => errors.push(error),
    })
    const response = await llm(stub.url)
    expect([response.status, await response.text()]).to.deep.equal([500, 'upstream broke'])
    expect(await release(1)).to.deep.equal({ slots: 1, outcome: 'released' })
    expect(errors).to.have.length(1)
    expect(errors[0]).to.be.instanceOf(SyntaxError)
    expect(await remaining()).to.deep.equal({ rpm: 99, tpm: 9_500, parallel: 1 })
  })

  it('works with a limiter of one in-flight policy, which takes no transit', async () => {
    stub = await startHttpStub((_, __, res) => res.end('ok'))
    const limiter = createRateLimiter({ store: memoryStore(), concurrency: 1 })
    const upstream = limitedFetch(limiter, { key: 'llm', maxWaitMs: '5s' })
    // The second call is admitted once the first one's body is read: a slot lives 60 s.
    for (let i = 0; i < 2; i++) expect(await (await upstream(stub.url)).text()).to.equal('ok')
    expect(stub.received()).to.equal(2)
  })

  it('reports a cost the limiter refuses (a negative number) the same way, and keeps the estimate', async () => {
    stub = await startHttpStub((_, __, res) => res.end(usage(-5)))
    const { wrapper, release, remaining } = limiterWithReleases()
    const errors: unknown[] = []
    const llm = limitedFetch(wrapper, {
      key: 'llm',
      cost: { tpm: 500 },
      settle: async (r) => ({ tpm: await tokensOf(r) }),
      onSettleError: (error) => errors.push(error),
    })
    expect(await (await llm(stub.url)).json()).to.deep.equal({ usage: { total_tokens: -5 } })
    await release(1)
    expect(errors.map((e) => (e as { code?: string }).code)).to.deep.equal(['ERR_FLEETLIMIT_OPTION'])
    expect(await remaining()).to.deep.equal({ rpm: 99, tpm: 9_500, parallel: 1 })
  })
})
