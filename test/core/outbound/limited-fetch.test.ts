import {
  type AcquireOptions,
  createRateLimiter,
  type Decision,
  isFleetlimitError,
  RateLimitTimeoutError,
} from '@fleetlimit/core'
import { expect } from 'chai'
import sinon from 'sinon'
import {
  type FetchFunction,
  type LimitedFetchOptions,
  limitedFetch,
  type OutboundLimiter,
} from '../../../packages/core/src/outbound/limited-fetch.js'

const ADMITTED: Decision = {
  allowed: true,
  limit: 10,
  remaining: 9,
  retryAfterMs: 0,
  resetMs: 1_000,
  source: 'store',
  policy: 'upstream',
}

const reply = (status: number, headers: Record<string, string> = {}) =>
  new Response(`answer ${status}`, { status, headers })

/**
 * A fake limiter and a fake fetch sharing one log of what happened, in order. `onAcquire` stands for the
 * limiter's wait (it may move the fake clock, reject, or hold the call); each fetch answers the next response.
 */
function setup(
  responses: Response[],
  onAcquire: (call: number, options: AcquireOptions) => Promise<void> | void = () => {},
) {
  const events: string[] = []
  const acquired: AcquireOptions[] = []
  const sent: { input: string | URL | Request; init: RequestInit | undefined }[] = []
  const limiter: OutboundLimiter = {
    async acquire(key, options = {}) {
      acquired.push(options)
      events.push(`acquire ${JSON.stringify(key)} ${options.maxWaitMs}`)
      await onAcquire(acquired.length, options)
      return ADMITTED
    },
    async pause(key, ms) {
      events.push(`pause ${JSON.stringify(key)} ${ms}`)
    },
  }
  const fetch: FetchFunction = async (input, init) => {
    sent.push({ input, init })
    const response = responses[sent.length - 1]
    if (!response) throw new Error('the test gave no response for this attempt')
    events.push(`fetch ${response.status}`)
    return response
  }
  const make = (options: Partial<LimitedFetchOptions> = {}) =>
    limitedFetch(limiter, { key: 'upstream', fetch, ...options })
  return { events, acquired, sent, limiter, fetch, make }
}

describe('limitedFetch (fake limiter and fetch)', () => {
  let clock: sinon.SinonFakeTimers

  // Only the clocks are fake: promises and timers run as usual, and the clock moves when a fake wait moves it.
  beforeEach(() => {
    clock = sinon.useFakeTimers({ now: Date.UTC(2025, 0, 1), toFake: ['Date', 'performance'] })
  })
  afterEach(() => {
    clock.restore()
    sinon.restore()
  })

  it('acquires before the call, with the whole budget and the cost, and returns the upstream’s answer', async () => {
    const ok = reply(200)
    const { events, acquired, sent, make } = setup([ok])
    const init = { headers: { accept: 'application/json' } }
    const response = await make({ maxWaitMs: '5s', cost: 3 })('https://upstream.test/a', init)
    expect(response).to.equal(ok)
    expect(response.bodyUsed).to.equal(false)
    expect(events).to.deep.equal(['acquire "upstream" 5000', 'fetch 200'])
    expect(acquired[0]).to.deep.equal({ maxWaitMs: 5_000, cost: 3 })
    expect(sent).to.deep.equal([{ input: 'https://upstream.test/a', init }])
  })

  it('passes an object key through as is, and names no cost unless given', async () => {
    const { events, acquired, make } = setup([reply(200)])
    await make({ key: { tenant: 'acme', route: 'search' } })('https://upstream.test/')
    expect(events[0]).to.equal('acquire {"tenant":"acme","route":"search"} 30000')
    expect(acquired[0]).to.deep.equal({ maxWaitMs: 30_000 })
  })

  it('on a 429 with Retry-After: 2, pauses the key for 2000 ms, then acquires again and retries', async () => {
    const limited = reply(429, { 'retry-after': '2' })
    const ok = reply(200)
    const { events, sent, make } = setup([limited, ok], (call) => {
      // The second acquire waits out the pause.
      if (call === 2) clock.tick(2_000)
    })
    const response = await make({ maxWaitMs: 10_000 })('https://upstream.test/', { method: 'POST', body: 'x' })
    expect(response).to.equal(ok)
    expect(events).to.deep.equal([
      'acquire "upstream" 10000',
      'fetch 429',
      'pause "upstream" 2000',
      'acquire "upstream" 10000',
      'fetch 200',
    ])
    expect(limited.bodyUsed, 'the retried answer’s body was cancelled, freeing its connection').to.equal(true)
    expect(sent[1]).to.deep.equal(sent[0])
  })

  it('does the same for a 503 with Retry-After', async () => {
    const { events, make } = setup([reply(503, { 'retry-after': '1' }), reply(200)])
    expect((await make()('https://upstream.test/')).status).to.equal(200)
    expect(events).to.include('pause "upstream" 1000')
  })

  it('reads the HTTP-date form, measured from the response’s Date header', async () => {
    const date = new Date(Date.now()).toUTCString()
    const retryAt = new Date(Date.now() + 3_000).toUTCString()
    const { events, make } = setup([reply(429, { 'retry-after': retryAt, date }), reply(200)])
    // This machine's clock runs 10 s ahead of the upstream's: the pause is still the 3 s the upstream asked.
    clock.tick(10_000)
    expect((await make()('https://upstream.test/')).status).to.equal(200)
    expect(events).to.include('pause "upstream" 3000')
  })

  it('reads the HTTP-date form against the local clock when the response has no Date header', async () => {
    const retryAt = new Date(Date.now() + 4_000).toUTCString()
    const { events, make } = setup([reply(429, { 'retry-after': retryAt }), reply(200)])
    expect((await make()('https://upstream.test/')).status).to.equal(200)
    expect(events).to.include('pause "upstream" 4000')
  })

  it('returns a 429 or 503 without a (valid) Retry-After as is: no pause, no blind retry', async () => {
    for (const response of [
      reply(429),
      reply(503),
      reply(429, { 'retry-after': 'soon' }),
      reply(429, { 'retry-after': '-1' }),
    ]) {
      const { events, make } = setup([response, reply(200)])
      expect(await make()('https://upstream.test/')).to.equal(response)
      expect(events).to.deep.equal(['acquire "upstream" 30000', `fetch ${response.status}`])
      expect(response.bodyUsed, 'the caller reads the body').to.equal(false)
    }
  })

  it('returns every other status as is, even with a Retry-After', async () => {
    for (const status of [200, 201, 301, 400, 404, 500, 502]) {
      const response = reply(status, { 'retry-after': '5' })
      const { events, make } = setup([response, reply(200)])
      expect(await make()('https://upstream.test/')).to.equal(response)
      expect(events).to.deep.equal(['acquire "upstream" 30000', `fetch ${status}`])
    }
  })

  it('retries at most maxRetries times, pausing the fleet on each 429, and returns the last one unread', async () => {
    const answers = [1, 2, 3].map(() => reply(429, { 'retry-after': '1' }))
    const { events, make } = setup(answers, () => void clock.tick(1_000))
    const response = await make({ maxWaitMs: '1m' })('https://upstream.test/')
    expect(response).to.equal(answers[2])
    expect(events.filter((e) => e.startsWith('fetch'))).to.have.length(3)
    expect(events.filter((e) => e.startsWith('pause'))).to.have.length(3)
    expect(answers.map((a) => a.bodyUsed)).to.deep.equal([true, true, false])
  })

  it('with maxRetries: 0 still pauses the fleet, and returns the 429', async () => {
    const limited = reply(429, { 'retry-after': '2' })
    const { events, make } = setup([limited, reply(200)])
    expect(await make({ maxRetries: 0 })('https://upstream.test/')).to.equal(limited)
    expect(events).to.deep.equal(['acquire "upstream" 30000', 'fetch 429', 'pause "upstream" 2000'])
  })

  it('retries at once, without a pause, on Retry-After: 0', async () => {
    const { events, make } = setup([reply(429, { 'retry-after': '0' }), reply(200)])
    expect((await make()('https://upstream.test/')).status).to.equal(200)
    expect(events).to.deep.equal(['acquire "upstream" 30000', 'fetch 429', 'acquire "upstream" 30000', 'fetch 200'])
  })

  it('gives each acquire what is left of the budget, time spent waiting and fetching included', async () => {
    const answers = [reply(429, { 'retry-after': '1' }), reply(429, { 'retry-after': '1' }), reply(200)]
    const { acquired, make, fetch } = setup(answers, (call) => void clock.tick(call === 1 ? 300 : 1_000))
    // Each attempt takes 200 ms on the wire.
    const slow: FetchFunction = async (input, init) => {
      clock.tick(200)
      return fetch(input, init)
    }
    expect((await make({ maxWaitMs: 5_000, fetch: slow })('https://upstream.test/')).status).to.equal(200)
    expect(acquired.map((o) => o.maxWaitMs)).to.deep.equal([5_000, 4_500, 3_300])
  })

  it('does not retry when the pause outlasts the budget: the fleet is paused, the 429 returned unread', async () => {
    const limited = reply(429, { 'retry-after': '10' })
    const { events, make } = setup([limited, reply(200)])
    expect(await make({ maxWaitMs: '5s' })('https://upstream.test/')).to.equal(limited)
    expect(events).to.deep.equal(['acquire "upstream" 5000', 'fetch 429', 'pause "upstream" 10000'])
    expect(limited.bodyUsed).to.equal(false)
  })

  it('returns the last 429 unread when the retry’s acquire times out (others used the quota meanwhile)', async () => {
    const limited = reply(429, { 'retry-after': '1' })
    const { events, make } = setup([limited, reply(200)], (call) => {
      if (call === 2) throw new RateLimitTimeoutError(700, 4_000)
    })
    expect(await make({ maxWaitMs: 5_000 })('https://upstream.test/')).to.equal(limited)
    expect(events.filter((e) => e.startsWith('fetch'))).to.deep.equal(['fetch 429'])
    expect(limited.bodyUsed).to.equal(false)
  })

  it('rejects with the limiter’s error when the first acquire times out: there is no answer to return', async () => {
    const timeout = new RateLimitTimeoutError(9_000, 5_000)
    const { sent, make } = setup([reply(200)], () => {
      throw timeout
    })
    const error = await make({ maxWaitMs: 5_000 })('https://upstream.test/').catch((e: unknown) => e)
    expect(error).to.equal(timeout)
    expect(sent).to.have.length(0)
  })

  it('caps an absurd Retry-After at maxPauseMs (default one hour)', async () => {
    const { events, make } = setup([reply(429, { 'retry-after': '99999999' }), reply(429, { 'retry-after': '86400' })])
    await make({ maxRetries: 0 })('https://upstream.test/')
    await make({ maxRetries: 0, maxPauseMs: '1m' })('https://upstream.test/')
    expect(events.filter((e) => e.startsWith('pause'))).to.deep.equal([
      'pause "upstream" 3600000',
      'pause "upstream" 60000',
    ])
  })

  it('replays bodies fetch reads afresh each time: none, string, bytes, URLSearchParams, Blob, FormData', async () => {
    const form = new FormData()
    form.set('a', '1')
    for (const body of [
      undefined,
      null,
      'text',
      new Uint8Array([1, 2]),
      Buffer.from('buffer'),
      new ArrayBuffer(4),
      new URLSearchParams({ q: 'x' }),
      new Blob(['blob']),
      form,
    ]) {
      const { sent, make } = setup([reply(429, { 'retry-after': '1' }), reply(200)])
      const response = await make()('https://upstream.test/', body === undefined ? {} : { method: 'POST', body })
      expect(response.status, String(body)).to.equal(200)
      expect(sent[1]?.init?.body).to.equal(body)
    }
  })

  it('does not replay a one-shot body (a stream, or a Request’s): pauses the fleet and returns the 429', async () => {
    const stream = () =>
      new ReadableStream({
        start(controller) {
          controller.enqueue(new Uint8Array([1]))
          controller.close()
        },
      })
    const requests: [string | Request, RequestInit | undefined][] = [
      ['https://upstream.test/', { method: 'POST', body: stream(), duplex: 'half' } as RequestInit],
      [new Request('https://upstream.test/', { method: 'POST', body: 'x' }), undefined],
      [new Request('https://upstream.test/', { method: 'POST', body: stream(), duplex: 'half' } as RequestInit), {}],
    ]
    for (const [input, init] of requests) {
      const limited = reply(429, { 'retry-after': '1' })
      const { events, make } = setup([limited, reply(200)])
      expect(await make()(input, init)).to.equal(limited)
      expect(events).to.deep.equal(['acquire "upstream" 30000', 'fetch 429', 'pause "upstream" 1000'])
    }
  })

  it('replays a Request without a body, and one whose body init replaces with a string', async () => {
    for (const [input, init] of [
      [new Request('https://upstream.test/'), undefined],
      [new Request('https://upstream.test/', { method: 'POST', body: 'old' }), { body: 'new' }],
    ] as const) {
      const { sent, make } = setup([reply(429, { 'retry-after': '1' }), reply(200)])
      expect((await make()(input, init)).status).to.equal(200)
      expect(sent).to.have.length(2)
    }
  })

  it('passes init.signal to acquire; an abort while waiting rejects with its reason and cancels the 429', async () => {
    const controller = new AbortController()
    const reason = new Error('the caller gave up')
    let waiting: () => void = () => {}
    const reached = new Promise<void>((resolve) => {
      waiting = resolve
    })
    const limited = reply(429, { 'retry-after': '2' })
    const { acquired, sent, make } = setup([limited, reply(200)], (call, { signal }) => {
      if (call === 1) return
      waiting()
      // The fake keeps acquire's contract: an abort rejects the wait with the signal's reason.
      return new Promise((_, reject) => signal?.addEventListener('abort', () => reject(signal.reason)))
    })
    const call = make()('https://upstream.test/', { signal: controller.signal }).catch((e: unknown) => e)
    await reached
    controller.abort(reason)
    expect(await call).to.equal(reason)
    expect(acquired.map((o) => o.signal)).to.deep.equal([controller.signal, controller.signal])
    expect(sent).to.have.length(1)
    expect(limited.bodyUsed).to.equal(true)
  })

  it('rejects at once with the reason of a signal already aborted, acquiring nothing', async () => {
    const reason = new Error('already')
    const { events, make } = setup([reply(200)])
    const error = await make()('https://upstream.test/', { signal: AbortSignal.abort(reason) }).catch((e) => e)
    expect(error).to.equal(reason)
    expect(events).to.deep.equal([])
  })

  it('uses a Request’s own signal unless init names one (null: none)', async () => {
    const own = new AbortController()
    const other = new AbortController()
    const request = new Request('https://upstream.test/', { signal: own.signal })
    const { acquired, make } = setup([reply(200), reply(200), reply(200)])
    const limited = make()
    await limited(request)
    await limited(request, { signal: other.signal })
    await limited(request, { signal: null })
    const [first, second, third] = acquired
    // A Request follows its signal with one of its own, which aborts with it.
    expect(first?.signal?.aborted).to.equal(false)
    own.abort()
    expect(first?.signal?.aborted).to.equal(true)
    expect(second?.signal).to.equal(other.signal)
    expect(third).to.not.have.property('signal')
  })

  it('rejects with the pause’s error, and cancels the 429 it could not act on', async () => {
    const limited = reply(429, { 'retry-after': '2' })
    const { limiter, fetch } = setup([limited])
    const failure = new Error('store down')
    limiter.pause = async () => {
      throw failure
    }
    const error = await limitedFetch(limiter, { key: 'upstream', fetch })('https://upstream.test/').catch((e) => e)
    expect(error).to.equal(failure)
    expect(limited.bodyUsed).to.equal(true)
  })

  it('calls the global fetch by default, looked up at each call', async () => {
    const ok = reply(200)
    const { limiter } = setup([])
    const limited = limitedFetch(limiter, { key: 'upstream' })
    const stub = sinon.stub(globalThis, 'fetch').resolves(ok)
    expect(await limited('https://upstream.test/x', { method: 'GET' })).to.equal(ok)
    expect(stub.calledOnceWithExactly('https://upstream.test/x', { method: 'GET' })).to.equal(true)
  })

  describe('options, checked when it is created', () => {
    const { limiter } = setup([])
    const optionError = (make: () => unknown) => {
      try {
        make()
      } catch (error) {
        expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION'), String(error)).to.equal(true)
        return (error as Error).message
      }
      throw new Error('no error thrown')
    }
    const withOptions = (options: unknown) => () => limitedFetch(limiter, options as LimitedFetchOptions)

    it('needs a key, and says what to pass', () => {
      expect(optionError(withOptions({}))).to.equal(
        "fleetlimit: invalid option `key`: got undefined; expected the limiter key of the upstream's quota: a string " +
          "such as 'api.example.com', or { tenant, route? } of strings.",
      )
      expect(optionError(withOptions({ key: 42 }))).to.include('got 42')
      expect(optionError(withOptions({ key: { tenant: 'a', route: 1 } }))).to.include('invalid option `key`')
    })

    it('says what each bad value should be', () => {
      expect(optionError(withOptions({ key: 'k', maxRetries: -1 }))).to.equal(
        'fleetlimit: invalid option `maxRetries`: got -1; expected a whole number from 0 to 100.',
      )
      expect(optionError(withOptions({ key: 'k', maxRetries: 1.5 }))).to.include('`maxRetries`')
      expect(optionError(withOptions({ key: 'k', maxWaitMs: 'forever' }))).to.include(
        'invalid option `maxWaitMs`: got "forever"; expected a whole number of milliseconds, or a string like \'250ms\'',
      )
      expect(optionError(withOptions({ key: 'k', maxWaitMs: Number.POSITIVE_INFINITY }))).to.include('`maxWaitMs`')
      expect(optionError(withOptions({ key: 'k', maxPauseMs: 0 }))).to.include('`maxPauseMs`: got 0')
      expect(optionError(withOptions({ key: 'k', cost: 0 }))).to.equal(
        `fleetlimit: invalid option \`cost\`: got 0; expected a whole number from 1 to 1000000000.`,
      )
      expect(optionError(withOptions({ key: 'k', fetch: 'node-fetch' }))).to.equal(
        'fleetlimit: invalid option `fetch`: got "node-fetch"; expected a function.',
      )
    })

    it('names the accepted options when given an unknown one', () => {
      expect(optionError(withOptions({ key: 'k', retries: 3 }))).to.equal(
        'fleetlimit: unknown option `limitedFetch.retries` (got 3): accepted options are key, maxRetries, ' +
          'maxWaitMs, cost, priority, maxPauseMs, fetch, transitMs, settle, onSettleError, adapt, quotas.',
      )
      expect(optionError(withOptions('k'))).to.include('invalid option `limitedFetch`')
    })

    it('needs a limiter first', () => {
      const notLimiter = () => limitedFetch({} as OutboundLimiter, { key: 'k' })
      const withoutPause = () => limitedFetch({ acquire: limiter.acquire } as OutboundLimiter, { key: 'k' })
      expect(optionError(withoutPause)).to.include('invalid option `limiter`')
      expect(optionError(notLimiter)).to.equal(
        'fleetlimit: invalid option `limiter`: got an object; expected a limiter from createRateLimiter() as the ' +
          'first argument.',
      )
    })

    it('accepts 0 retries and a 0 budget (admitted at once, or not at all)', () => {
      expect(limitedFetch(limiter, { key: 'k', maxRetries: 0, maxWaitMs: 0 })).to.be.a('function')
    })
  })
})

describe('limitedFetch: in-flight slots and settle (fake limiter and fetch)', () => {
  const tokensOf = (body: unknown) => (body as { usage: { total_tokens: number } }).usage.total_tokens

  /**
   * A fake limiter whose n-th admission holds a slot (it has `extend`, as a real one's does), and a fake fetch
   * answering `responses` in turn: both log to `events`; `until(event)` resolves once it is logged.
   */
  function setupSlots(responses: (Response | Error)[]) {
    const events: string[] = []
    const waiting = new Map<string, () => void>()
    const log = (event: string) => {
      events.push(event)
      waiting.get(event)?.()
    }
    const until = (event: string) =>
      events.includes(event) ? Promise.resolve() : new Promise<void>((resolve) => waiting.set(event, resolve))
    const numbers = new WeakMap<Decision, number>()
    let admitted = 0
    const limiter: Required<OutboundLimiter> = {
      async acquire() {
        const decision = { ...ADMITTED }
        Object.defineProperty(decision, 'extend', { value: async () => true })
        numbers.set(decision, ++admitted)
        log(`acquire ${admitted}`)
        return decision
      },
      async pause(_key, ms) {
        log(`pause ${ms}`)
      },
      async release(decision) {
        log(`release ${numbers.get(decision)}`)
        return { slots: 1, outcome: 'released' }
      },
      async settle(decision, { cost }) {
        log(`settle ${numbers.get(decision)} ${JSON.stringify(cost)}`)
        return { outcome: 'settled', overLimit: 0 }
      },
    }
    let sent = 0
    const fetch: FetchFunction = async () => {
      const answer = responses[sent++]
      if (answer instanceof Error) {
        log('fetch threw')
        throw answer
      }
      if (!answer) throw new Error('the test gave no response for this attempt')
      log(`fetch ${answer.status}`)
      return answer
    }
    return { events, until, limiter, fetch }
  }

  it('releases the slot when the body has been read, not before', async () => {
    const { events, until, limiter, fetch } = setupSlots([reply(200)])
    const response = await limitedFetch(limiter, { key: 'upstream', fetch })('https://upstream.test/')
    expect(events).to.deep.equal(['acquire 1', 'fetch 200'])
    expect(await response.text()).to.equal('answer 200')
    await until('release 1')
    expect(events).to.deep.equal(['acquire 1', 'fetch 200', 'release 1'])
  })

  it('releases the slot of a retried 429 before acquiring for the retry, which may need that slot', async () => {
    const { events, until, limiter, fetch } = setupSlots([reply(429, { 'retry-after': '1' }), reply(200)])
    const response = await limitedFetch(limiter, { key: 'upstream', fetch })('https://upstream.test/')
    expect(events).to.deep.equal(['acquire 1', 'fetch 429', 'pause 1000', 'release 1', 'acquire 2', 'fetch 200'])
    await response.body?.cancel()
    await until('release 2')
  })

  it('releases the slot, then rejects, when the fetch throws', async () => {
    const failure = new TypeError('fetch failed')
    const { events, limiter, fetch } = setupSlots([failure])
    const error = await limitedFetch(limiter, { key: 'upstream', fetch })('https://upstream.test/').catch((e) => e)
    expect(error).to.equal(failure)
    expect(events).to.deep.equal(['acquire 1', 'fetch threw', 'release 1'])
  })

  it('settles each attempt to the cost read from its response (a retried 429 too), then releases its slot', async () => {
    const { events, until, limiter, fetch } = setupSlots([
      reply(429, { 'retry-after': '0' }),
      new Response('{"usage":{"total_tokens":42}}'),
    ])
    const settle = async (response: Response) => (response.ok ? tokensOf(await response.json()) : 0)
    const response = await limitedFetch(limiter, { key: 'upstream', fetch, settle })('https://upstream.test/')
    expect(await response.json()).to.deep.equal({ usage: { total_tokens: 42 } })
    await until('release 2')
    expect(events).to.deep.equal([
      'acquire 1',
      'fetch 429',
      'settle 1 0',
      'release 1',
      'acquire 2',
      'fetch 200',
      'settle 2 42',
      'release 2',
    ])
  })

  it('keeps the response and frees the slot when settle throws, and says why through onSettleError', async () => {
    const { events, until, limiter, fetch } = setupSlots([new Response('not json')])
    const errors: unknown[] = []
    const upstream = limitedFetch(limiter, {
      key: 'upstream',
      fetch,
      settle: async (response) => tokensOf(await response.json()),
      onSettleError: (error) => errors.push(error),
    })
    const response = await upstream('https://upstream.test/')
    expect(await response.text()).to.equal('not json')
    await until('release 1')
    expect(events).to.deep.equal(['acquire 1', 'fetch 200', 'release 1'])
    expect(errors).to.have.length(1)
    expect(errors[0]).to.be.instanceOf(SyntaxError)
  })

  it('fails before sending when a wrapper without release() admits with a slot it could not give back', async () => {
    const { events, limiter, fetch } = setupSlots([reply(200)])
    const wrapper: OutboundLimiter = { acquire: limiter.acquire, pause: limiter.pause }
    const error = await limitedFetch(wrapper, { key: 'upstream', fetch })('https://upstream.test/').catch((e) => e)
    expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION'), String(error)).to.equal(true)
    expect(String(error)).to.include('a limiter with release() for an in-flight policy')
    expect(events).to.deep.equal(['acquire 1'])
  })

  it('passes its priority class to acquire, refuses a value that is no name, and the limiter an unknown one', async () => {
    const limiter = createRateLimiter({
      limit: 10,
      window: '1s',
      priorities: [
        { name: 'interactive', share: 0.7 },
        { name: 'batch', share: 0.3 },
      ],
    })
    const asked: (AcquireOptions | undefined)[] = []
    const decided: Decision[] = []
    const spy: OutboundLimiter = {
      ...limiter,
      async acquire(key, options) {
        asked.push(options)
        const decision = await limiter.acquire(key, options)
        decided.push(decision)
        return decision
      },
    }
    const fetch = async () => new Response('ok')
    await (
      await limitedFetch(spy, { key: 'upstream', fetch, priority: 'interactive' })('https://upstream.test/')
    ).text()
    await (await limitedFetch(spy, { key: 'upstream', fetch })('https://upstream.test/')).text()
    expect(asked.map((options) => options?.priority)).to.deep.equal(['interactive', undefined])
    expect(decided.map((d) => d.priority)).to.deep.equal(['interactive', 'batch'])
    for (const priority of [1, {}, ['batch']]) {
      let thrown: unknown
      try {
        limitedFetch(limiter, { key: 'upstream', fetch, priority: priority as never })
      } catch (error) {
        thrown = error
      }
      expect(isFleetlimitError(thrown, 'ERR_FLEETLIMIT_OPTION'), String(priority)).to.equal(true)
    }
    const unknown = limitedFetch(limiter, { key: 'upstream', fetch, priority: '../admin' })
    const rejected = await unknown('https://upstream.test/').catch((error: unknown) => error)
    expect(isFleetlimitError(rejected, 'ERR_FLEETLIMIT_OPTION')).to.equal(true)
    expect((rejected as Error).message).to.include("expected one of the policy's classes: interactive, batch")
  })

  it('passes a cost map to acquire, and checks its values and settle’s options when it is created', async () => {
    const { limiter, fetch } = setupSlots([reply(200)])
    const costs: unknown[] = []
    const spy: OutboundLimiter = {
      ...limiter,
      acquire(key, options) {
        costs.push(options?.cost)
        return limiter.acquire(key, options)
      },
    }
    const upstream = limitedFetch(spy, { key: 'upstream', fetch, cost: { rpm: 1, tpm: 500 }, transitMs: 0 })
    await (await upstream('https://upstream.test/')).text()
    expect(costs).to.deep.equal([{ rpm: 1, tpm: 500 }])
    const mistake = (options: Partial<LimitedFetchOptions>, on: OutboundLimiter = limiter) => {
      try {
        limitedFetch(on, { key: 'upstream', ...options })
      } catch (error) {
        return (error as Error).message
      }
      throw new Error('no error thrown')
    }
    expect(mistake({ cost: { tpm: 0 } })).to.equal(
      'fleetlimit: invalid option `cost.tpm`: got 0; expected a whole number from 1 to 1000000000.',
    )
    expect(mistake({ settle: 'usage' as never })).to.equal(
      'fleetlimit: invalid option `settle`: got "usage"; expected a function.',
    )
    expect(mistake({ settle: () => 1 }, { acquire: limiter.acquire, pause: limiter.pause })).to.include(
      'expected a limiter with settle() for the `settle` option',
    )
    expect(mistake({ onSettleError: true as never })).to.include('invalid option `onSettleError`')
  })
})
