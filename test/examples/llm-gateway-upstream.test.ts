// The llm-gateway example's stub upstream: its limits and its counts, exactly, on a clock the tests move by hand.
import { expect } from 'chai'
import { startUpstream, type Upstream, type UpstreamOptions } from '../../examples/llm-gateway/upstream.js'

const NO_LIMIT = { requestsPerWindow: Infinity, unitsPerWindow: Infinity, inFlight: Infinity }

describe('llm-gateway upstream stub', () => {
  let upstream: Upstream | undefined
  let clock = 0
  const start = async (options: Partial<UpstreamOptions>) => {
    clock = 0
    upstream = await startUpstream({ ...NO_LIMIT, now: () => clock, ...options })
    return upstream
  }
  /** One call answered: its status, Retry-After and body. */
  const call = async (holdMs = 0) => {
    const response = await fetch(`${upstream?.url}/v1/chat/completions?holdMs=${holdMs}`, { method: 'POST' })
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body: await response.json() }
  }

  afterEach(async () => {
    await upstream?.close()
    upstream = undefined
  })

  it('six calls at once on inFlight 5: five held, one 429 with Retry-After, six counted in flight', async () => {
    const { url, stats } = await start({ inFlight: 5, cost: () => 7 })
    const calls = Array.from({ length: 6 }, () =>
      fetch(`${url}/v1/chat/completions?holdMs=60000`).then(async (r) => ({
        status: r.status,
        retryAfter: r.headers.get('retry-after'),
      })),
    )
    // The five admitted hold for a minute: the first answer is the refusal, sent once five are held.
    const first = await Promise.race(calls)
    expect(first).to.deep.equal({ status: 429, retryAfter: '60' })
    expect(stats()).to.deep.include({
      served: 5,
      units: 35,
      rejected: 1,
      rejectedBy: { inFlight: 1, requests: 0, units: 0 },
      inFlight: 5,
      maxInFlight: 6,
      maxRequestsInWindow: 6,
      maxUnitsInWindow: 42,
    })
    // Closing drops the held calls.
    await upstream?.close()
    const settled = await Promise.allSettled(calls)
    expect(settled.map((s) => s.status).sort()).to.deep.equal([
      'fulfilled',
      'rejected',
      'rejected',
      'rejected',
      'rejected',
      'rejected',
    ])
  })

  it('frees a call’s slot before answering it: calls one after another on inFlight 1 are all served', async () => {
    const costs = [11, 22, 33]
    const { stats } = await start({ inFlight: 1, cost: () => costs.shift() ?? 0 })
    const bodies = [(await call()).body, (await call()).body, (await call()).body]
    expect(bodies).to.deep.equal([11, 22, 33].map((n) => ({ usage: { total_tokens: n } })))
    expect(stats()).to.deep.include({ served: 3, units: 66, rejected: 0, inFlight: 0, maxInFlight: 1 })
  })

  it('requests per window: a sliding window on its clock, with the exact Retry-After', async () => {
    const { stats } = await start({ requestsPerWindow: 3, windowMs: 2_500 })
    const statuses = [(await call()).status, (await call()).status, (await call()).status]
    clock = 100
    const early = await call()
    clock = 1_600
    const later = await call()
    clock = 2_499
    const last = await call()
    // (0, 2 500] no longer holds the three calls of time 0.
    clock = 2_500
    const after = await call()
    expect(statuses).to.deep.equal([200, 200, 200])
    expect([early, later, last].map((r) => [r.status, r.retryAfter])).to.deep.equal([
      [429, '3'],
      [429, '1'],
      [429, '1'],
    ])
    expect(after.status).to.equal(200)
    expect(stats()).to.deep.include({
      served: 4,
      rejected: 3,
      rejectedBy: { inFlight: 0, requests: 3, units: 0 },
      // At 2 499 the window holds the three admitted and the three refused calls.
      maxRequestsInWindow: 6,
      startedAt: 0,
      endedAt: 2_500,
    })
  })

  it('units per window: counted at arrival, refused until enough of the oldest have left', async () => {
    const costs = [60, 30, 20, 50]
    const { stats } = await start({ unitsPerWindow: 100, windowMs: 1_000, cost: () => costs.shift() ?? 0 })
    const first = [(await call()).status, (await call()).status]
    clock = 200
    const over = await call()
    clock = 1_000
    const back = await call()
    expect(first).to.deep.equal([200, 200])
    // 30 + 20 fit once the 60 of time 0 leaves, at 1 000.
    expect([over.status, over.retryAfter]).to.deep.equal([429, '1'])
    expect([back.status, back.body]).to.deep.equal([200, { usage: { total_tokens: 50 } }])
    expect(stats()).to.deep.include({
      served: 3,
      units: 140,
      rejected: 1,
      rejectedBy: { inFlight: 0, requests: 0, units: 1 },
      maxUnitsInWindow: 110,
    })
  })

  it('GET /stats: the same figures as stats(), null for a limit it does not enforce', async () => {
    const { url, stats } = await start({ inFlight: 2, windowMs: 5_000, cost: () => 9 })
    await call()
    const served = await (await fetch(`${url}/stats`)).json()
    expect(served).to.deep.equal(stats())
    expect(served).to.deep.include({
      limits: { requestsPerWindow: null, unitsPerWindow: null, inFlight: 2, windowMs: 5_000 },
      served: 1,
      units: 9,
    })
  })

  it('refuses a holdMs that is not a duration, counting nothing', async () => {
    const { url, stats } = await start({ inFlight: 1 })
    const response = await fetch(`${url}/v1/chat/completions?holdMs=soon`)
    expect(response.status).to.equal(400)
    expect(stats()).to.deep.include({ served: 0, rejected: 0, maxRequestsInWindow: 0, startedAt: null })
  })

  it('headers: states each rate as OpenAI does, and setLimits changes them mid-run', async () => {
    const { url, setLimits } = await start({
      requestsPerWindow: 3,
      unitsPerWindow: 100,
      windowMs: 1_000,
      cost: () => 40,
      headers: true,
    })
    const rates = async () => {
      const response = await fetch(`${url}/v1/chat/completions?holdMs=0`, { method: 'POST' })
      await response.arrayBuffer()
      return [
        response.status,
        ...['limit', 'remaining', 'reset'].flatMap((part) =>
          ['requests', 'tokens'].map((rate) => response.headers.get(`x-ratelimit-${part}-${rate}`)),
        ),
      ]
    }
    expect(await rates()).to.deep.equal([200, '3', '100', '2', '60', '1000ms', '1000ms'])
    clock = 400
    // Tokens have none left for a third call of 40 once this one is counted: room again when the first leaves.
    expect(await rates()).to.deep.equal([200, '3', '100', '1', '20', '600ms', '600ms'])
    setLimits({ requestsPerWindow: 1, unitsPerWindow: 50 })
    clock = 500
    // Over both new limits: refused, with none left of either until enough of the oldest calls leave (one request
    // at 1 400; a token once the first call's 40 leave, at 1 000).
    expect(await rates()).to.deep.equal([429, '1', '50', '0', '0', '900ms', '500ms'])
  })
})
