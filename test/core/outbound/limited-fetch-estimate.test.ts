import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRateLimiter, type Decision, memoryStore, type RateLimiter } from '@fleetlimit/core'
import { expect } from 'chai'
import { limitedFetch, type OutboundLimiter } from '../../../packages/core/src/outbound/limited-fetch.js'
import { optionErrorOf } from '../../support/option-error.js'

/** A real HTTP upstream on 127.0.0.1 that charges its n-th call (from 1) `tokens(n)` and says so in its JSON body. */
async function startLlmStub(tokens: (n: number) => number) {
  let calls = 0
  const server = createServer((req, res) => {
    req.resume()
    calls++
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ usage: { total_tokens: tokens(calls) } }))
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat`,
    async close() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

const readTokens = async (response: Response) =>
  ((await response.json()) as { usage: { total_tokens: number } }).usage.total_tokens

describe("limitedFetch with cost: 'estimate' (a real HTTP upstream, memory store)", () => {
  let stub: Awaited<ReturnType<typeof startLlmStub>> | undefined
  afterEach(async () => {
    await stub?.close()
    stub = undefined
  })

  it('reserves the estimate at each call, settles it to the usage the upstream reports, and learns from it', async () => {
    const costs = [100, 200, 300, 400, 500, 600, 700, 800, 900, 5_000]
    stub = await startLlmStub((n) => costs[(n - 1) % costs.length] as number)
    const limiter = createRateLimiter({
      store: memoryStore(),
      limit: 100_000,
      window: '1h',
      name: 'tpm',
      estimate: { initial: 1_000 },
    })
    // The limiter, with a log of what each settle was asked and answered: the signal that a call is fully done.
    const settled: {
      reserved: number | undefined
      cost: unknown
      result: Awaited<ReturnType<RateLimiter['settle']>>
    }[] = []
    const waiting: (() => void)[] = []
    const nextSettle = () => new Promise<void>((resolve) => waiting.push(resolve))
    const logged: OutboundLimiter = {
      acquire: (key, options) => limiter.acquire(key, options),
      pause: (key, ms) => limiter.pause(key, ms),
      async settle(decision: Decision, options) {
        const result = await limiter.settle(decision, options)
        settled.push({ reserved: decision.reserved, cost: options.cost, result })
        waiting.shift()?.()
        return result
      },
    }
    const llm = limitedFetch(logged, { key: 'llm', cost: 'estimate', settle: readTokens, maxWaitMs: '5s' })
    /** One call, read to its end, and its settle done. */
    const callOnce = async () => {
      const done = nextSettle()
      const response = await llm(stub?.url as string, { method: 'POST', body: '{}' })
      expect(response.status).to.equal(200)
      await response.arrayBuffer()
      await done
    }
    for (let i = 1; i <= 10; i++) await callOnce()
    expect(settled.map((s) => s.reserved)).to.deep.equal(Array(10).fill(1_000))
    expect(settled.map((s) => s.cost)).to.deep.equal(costs)
    expect(settled.map((s) => s.result.outcome)).to.deep.equal(Array(10).fill('settled'))
    expect(100_000 - (await limiter.peek('llm')).remaining, 'the window holds the true costs').to.equal(9_500)
    await callOnce()
    expect(settled[10], 'the p90 of the ten costs').to.deep.include({ reserved: 900, cost: 100 })
    expect(100_000 - (await limiter.peek('llm')).remaining).to.equal(9_600)
  })

  it("refuses cost: 'estimate' without `settle`, which is what teaches the estimate", () => {
    const limiter = createRateLimiter({ limit: 10, window: '1s', estimate: { initial: 2 } })
    const error = optionErrorOf(() => limitedFetch(limiter, { key: 'llm', cost: 'estimate' }))
    expect(error.option).to.equal('settle')
    expect(error.message).to.include("`cost: 'estimate'` learns the estimate from it")
  })
})
