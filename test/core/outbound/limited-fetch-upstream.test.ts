import { once } from 'node:events'
import { createServer, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRateLimiter, isFleetlimitError, memoryStore, type RateLimiterOptions } from '@fleetlimit/core'
import { expect } from 'chai'
import { limitedFetch } from '../../../packages/core/src/outbound/limited-fetch.js'

interface Answer {
  readonly status: number
  readonly headers?: OutgoingHttpHeaders
  readonly body?: string
}

/** A real HTTP upstream on 127.0.0.1 that answers its n-th request (from 1) with `answer(n)`. */
async function startStub(answer: (n: number, req: IncomingMessage) => Answer) {
  const received: { url: string; method: string; body: string }[] = []
  const server = createServer(async (req, res) => {
    let body = ''
    for await (const chunk of req) body += chunk
    received.push({ url: req.url ?? '', method: req.method ?? '', body })
    const { status, headers = {}, body: text = `answer ${received.length}` } = answer(received.length, req)
    res.writeHead(status, headers).end(text)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    async close() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

describe('limitedFetch against a real HTTP upstream (memory store)', () => {
  let stub: Awaited<ReturnType<typeof startStub>> | undefined
  afterEach(async () => {
    await stub?.close()
    stub = undefined
  })

  /** Two limiters on one store: two processes of a fleet sharing the upstream's quota. */
  function fleetOf(options: RateLimiterOptions) {
    const store = memoryStore()
    return [createRateLimiter({ store, ...options }), createRateLimiter({ store, ...options })] as const
  }

  describe('without an upstream 429', () => {
    it('holds calls beyond the limit until the window lets them through: the upstream sees no excess', async () => {
      // The upstream counts 3 per 400 ms; the fleet sends 3 per 500 ms, the margin covering the time on the wire.
      const arrivals: number[] = []
      stub = await startStub(() => {
        const at = performance.now()
        const inWindow = arrivals.filter((t) => t > at - 400).length
        if (inWindow >= 3) return { status: 429 }
        arrivals.push(at)
        return { status: 200 }
      })
      const [one, two] = fleetOf({ limit: 3, window: '500ms', name: 'upstream' })
      const fromOne = limitedFetch(one, { key: 'stub', maxWaitMs: '10s' })
      const fromTwo = limitedFetch(two, { key: 'stub', maxWaitMs: '10s' })
      const url = stub.url
      const responses = await Promise.all([1, 2, 3, 4, 5, 6, 7].map((i) => (i % 2 ? fromOne : fromTwo)(`${url}/${i}`)))
      expect(responses.map((r) => r.status)).to.deep.equal([200, 200, 200, 200, 200, 200, 200])
      expect(stub.received).to.have.length(7)
      await Promise.all(responses.map((r) => r.text()))
    })

    it('returns a 429 without Retry-After, and any other status, as the upstream sent it, body unread', async () => {
      stub = await startStub((n) => (n === 1 ? { status: 429, body: 'slow down' } : { status: 418, body: 'teapot' }))
      const [limiter] = fleetOf({ limit: 10, window: '1s' })
      const limited = limitedFetch(limiter, { key: 'stub' })
      const first = await limited(stub.url)
      expect([first.status, await first.text()]).to.deep.equal([429, 'slow down'])
      const second = await limited(stub.url, { method: 'POST', body: 'hello' })
      expect([second.status, await second.text()]).to.deep.equal([418, 'teapot'])
      expect(stub.received.map((r) => r.body)).to.deep.equal(['', 'hello'])
    })

    it('rejects with ERR_FLEETLIMIT_TIMEOUT when the quota frees too late for the budget, sending nothing', async () => {
      stub = await startStub(() => ({ status: 200 }))
      const [one, two] = fleetOf({ limit: 1, window: '10s' })
      expect((await limitedFetch(one, { key: 'stub' })(stub.url)).status).to.equal(200)
      const error = await limitedFetch(two, { key: 'stub', maxWaitMs: 200 })(stub.url).catch((e) => e)
      expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_TIMEOUT'), String(error)).to.equal(true)
      expect(stub.received).to.have.length(1)
    })

    it('stops waiting for the quota when the signal aborts, with its reason', async () => {
      stub = await startStub(() => ({ status: 200 }))
      const [limiter] = fleetOf({ limit: 1, window: '10s' })
      const limited = limitedFetch(limiter, { key: 'stub' })
      expect((await limited(stub.url)).status).to.equal(200)
      const controller = new AbortController()
      const reason = new Error('caller gave up')
      // The call is queued once the limiter has denied it: then the abort comes.
      limiter.on('decision', (decision) => {
        if (!decision.allowed) controller.abort(reason)
      })
      expect(await limited(stub.url, { signal: controller.signal }).catch((e) => e)).to.equal(reason)
      expect(stub.received).to.have.length(1)
    })
  })

  describe('an upstream 429 or 503 with Retry-After', () => {
    it('pauses the key for the whole fleet, waits the pause out, and retries the same request', async () => {
      stub = await startStub((n) =>
        n === 1 ? { status: 429, headers: { 'retry-after': '2' }, body: 'later' } : { status: 200, body: 'done' },
      )
      const [one, two] = fleetOf({ limit: 100, window: '1m', name: 'upstream' })
      const seenByTwo: Promise<unknown>[] = []
      // When one's retry is held by the pause, the other process is held too, with the wait left of the pause.
      one.on('decision', (decision) => {
        if (!decision.allowed && seenByTwo.length === 0) seenByTwo.push(two.consume('stub'))
      })
      const response = await limitedFetch(one, { key: 'stub', maxWaitMs: '10s' })(stub.url, {
        method: 'PUT',
        body: 'payload',
      })
      expect([response.status, await response.text()]).to.deep.equal([200, 'done'])
      expect(stub.received.map((r) => `${r.method} ${r.body}`)).to.deep.equal(['PUT payload', 'PUT payload'])
      expect(seenByTwo).to.have.length(1)
      const other = (await seenByTwo[0]) as { allowed: boolean; retryAfterMs: number }
      expect(other.allowed).to.equal(false)
      expect(other.retryAfterMs).to.be.within(1, 2_000)
    })

    it('returns the 429 unread when the pause outlasts the budget, and the fleet stays paused', async () => {
      stub = await startStub(() => ({ status: 503, headers: { 'retry-after': '30' }, body: 'maintenance' }))
      const [one, two] = fleetOf({ limit: 100, window: '1m' })
      const response = await limitedFetch(one, { key: 'stub', maxWaitMs: '5s' })(stub.url)
      expect([response.status, await response.text()]).to.deep.equal([503, 'maintenance'])
      expect(stub.received).to.have.length(1)
      const other = await two.consume('stub')
      expect(other.allowed).to.equal(false)
      expect(other.retryAfterMs).to.be.within(25_000, 30_000)
      // A call that cannot wait that long fails at once, without reaching the upstream.
      const error = await limitedFetch(two, { key: 'stub', maxWaitMs: '5s' })(stub.url).catch((e) => e)
      expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_TIMEOUT'), String(error)).to.equal(true)
      expect(stub.received).to.have.length(1)
    })
  })
})
