import {
  type AcquireOptions,
  createRateLimiter,
  type Decision,
  definePolicy,
  type KeyInput,
  memoryStore,
} from '@fleetlimit/core'
import { expect } from 'chai'
import { type LimitedFetchOptions, limitedFetch } from '../../../packages/core/src/outbound/limited-fetch.js'
import { startHttpStub } from '../../support/http-stub.js'

// A caller aborting its own limitedFetch call, at each point of the call, with and without `settle`: the call
// (or its body) rejects with the abort reason, nothing reaches the process as an unhandled rejection, and no slot
// or unit is left behind.

/** Rejections no one handled, while the test runs (each one an exit, in production). */
function watchRejections() {
  const rejections: unknown[] = []
  const record = (reason: unknown) => rejections.push(reason)
  process.prependListener('unhandledRejection', record)
  return {
    rejections,
    /** Those seen once every continuation of the abort has run: Node reports one after the microtasks drain. */
    async settled() {
      for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve))
      return rejections
    },
    stop: () => process.off('unhandledRejection', record),
  }
}

const usage = (tokens: number) => JSON.stringify({ usage: { total_tokens: tokens } })

/** The usual LLM settle: the tokens of a 200's body; a refused call is not charged, and its body is left unread. */
const readTokens = async (response: Response) => ({
  tpm: response.ok ? ((await response.json()) as { usage: { total_tokens: number } }).usage.total_tokens : 0,
})

/** Requests and tokens per minute, and one call in flight, so that a slot left held shows in `peek`. */
const policies = [
  definePolicy({ name: 'rpm', limit: 100, window: '1m' }),
  definePolicy({ name: 'tpm', limit: 10_000, window: '1m' }),
  definePolicy({ name: 'parallel', concurrency: 1 }),
]

/** A limiter of the three policies that tells when limitedFetch acquires and when it releases (off its path). */
function watchedLimiter(chosen = policies) {
  const limiter = createRateLimiter({ store: memoryStore(), policies: chosen })
  const calls: string[] = []
  const waiters: (() => void)[] = []
  const note = (call: string) => {
    calls.push(call)
    for (const wake of waiters.splice(0)) wake()
  }
  const wrapper = {
    ...limiter,
    acquire(key: KeyInput, options?: AcquireOptions) {
      note('acquire')
      return limiter.acquire(key, options)
    },
    async release(decision: Decision) {
      const result = await limiter.release(decision)
      note('release')
      return result
    },
  }
  /** Once `call` has been made `n` times (a release: and answered). */
  const made = async (call: string, n: number) => {
    while (calls.filter((c) => c === call).length < n) await new Promise<void>((resolve) => waiters.push(resolve))
  }
  /** Each policy's remaining units (for `parallel`: free slots) now. */
  const remaining = async () => {
    const peek = await limiter.peek('llm')
    return Object.fromEntries((peek.policies ?? []).map((d) => [d.policy, d.remaining]))
  }
  return { wrapper, calls, made, remaining }
}

describe('limitedFetch aborted by its caller (memory store, real HTTP upstream)', () => {
  let stub: Awaited<ReturnType<typeof startHttpStub>> | undefined
  let watch: ReturnType<typeof watchRejections> | undefined
  beforeEach(() => {
    watch = watchRejections()
  })
  afterEach(async () => {
    watch?.stop()
    await stub?.close()
    stub = undefined
  })

  const stopped = () => new Error('stopped by the caller')

  /** limitedFetch's options for one case: with `settle` (and onSettleError logged to `errors`) or without. */
  function options(withSettle: boolean, errors: unknown[]): LimitedFetchOptions {
    return {
      key: 'llm',
      cost: { rpm: 1, tpm: 500 },
      maxWaitMs: '30s',
      adapt: false,
      ...(withSettle && { settle: readTokens, onSettleError: (error: unknown) => errors.push(error) }),
    }
  }

  for (const withSettle of [true, false]) {
    const label = withSettle ? 'with settle' : 'without settle'

    it(`${label}: aborted while a 429 pauses the key, rejects with the reason; the 429's units are settled`, async () => {
      stub = await startHttpStub((_n, _req, res) => res.writeHead(429, { 'retry-after': '20' }).end('slow down'))
      const { wrapper, made, remaining } = watchedLimiter()
      const errors: unknown[] = []
      const stop = new AbortController()
      const call = limitedFetch(wrapper, options(withSettle, errors))(stub.url, { method: 'POST', signal: stop.signal })
      const outcome = call.catch((error: unknown) => error)
      // The retry's acquire waits out the pause; the 429 was settled and its slot released before it.
      await made('acquire', 2)
      const reason = stopped()
      stop.abort(reason)
      expect(await outcome).to.equal(reason)
      expect(await watch?.settled()).to.deep.equal([])
      expect(errors).to.deep.equal([])
      expect(stub.received()).to.equal(1)
      // Settled: the 429 costs no tokens. Without settle it keeps the 500 it was admitted with.
      expect(await remaining()).to.deep.equal({ rpm: 99, tpm: withSettle ? 10_000 : 9_500, parallel: 1 })
    })

    it(`${label}: aborted before the headers arrive, rejects with the reason; the units stay, the slot is freed`, async () => {
      let answered = 0
      stub = await startHttpStub(() => answered++)
      const { wrapper, calls, remaining } = watchedLimiter()
      const errors: unknown[] = []
      const stop = new AbortController()
      const call = limitedFetch(wrapper, options(withSettle, errors))(stub.url, { signal: stop.signal })
      const outcome = call.catch((error: unknown) => error)
      while (stub.received() === 0) await new Promise((resolve) => setImmediate(resolve))
      const reason = stopped()
      stop.abort(reason)
      expect(await outcome).to.equal(reason)
      expect(await watch?.settled()).to.deep.equal([])
      expect([calls, errors, answered]).to.deep.equal([['acquire', 'release'], [], 1])
      // The upstream may have counted the call: its units stay.
      expect(await remaining()).to.deep.equal({ rpm: 99, tpm: 9_500, parallel: 1 })
    })

    it(`${label}: aborted while the body streams, the body rejects with the reason; the slot is freed`, async () => {
      stub = await startHttpStub((_n, _req, res) => res.writeHead(200).write('{"usage":'))
      const { wrapper, made, remaining } = watchedLimiter()
      const errors: unknown[] = []
      const stop = new AbortController()
      const response = await limitedFetch(wrapper, options(withSettle, errors))(stub.url, { signal: stop.signal })
      const reader = (response.body as ReadableStream<Uint8Array>).getReader()
      expect(new TextDecoder().decode((await reader.read()).value)).to.equal('{"usage":')
      const reason = stopped()
      stop.abort(reason)
      expect(await reader.read().catch((error: unknown) => error)).to.equal(reason)
      await made('release', 1)
      expect(await watch?.settled()).to.deep.equal([])
      // The settle's copy was cut short by the caller: nothing went wrong in it, and the estimate stays.
      expect(errors).to.deep.equal([])
      expect(await remaining()).to.deep.equal({ rpm: 99, tpm: 9_500, parallel: 1 })
    })

    it(`${label}: aborted after the headers, before the body is read: the body rejects with the reason`, async () => {
      stub = await startHttpStub((_n, _req, res) => res.writeHead(200).write('{"usage":'))
      const { wrapper, calls, made, remaining } = watchedLimiter()
      const errors: unknown[] = []
      const stop = new AbortController()
      const response = await limitedFetch(wrapper, options(withSettle, errors))(stub.url, { signal: stop.signal })
      const reason = stopped()
      stop.abort(reason)
      expect(await watch?.settled()).to.deep.equal([])
      expect(calls).to.deep.equal(['acquire'])
      expect(await response.text().catch((error: unknown) => error)).to.equal(reason)
      await made('release', 1)
      expect(await watch?.settled()).to.deep.equal([])
      expect(errors).to.deep.equal([])
      expect(await remaining()).to.deep.equal({ rpm: 99, tpm: 9_500, parallel: 1 })
    })

    it(`${label}: aborted after the body was read, changes nothing: settled, the slot freed`, async () => {
      stub = await startHttpStub((_n, _req, res) => res.end(usage(137)))
      const { wrapper, made, remaining } = watchedLimiter()
      const errors: unknown[] = []
      const stop = new AbortController()
      const response = await limitedFetch(wrapper, options(withSettle, errors))(stub.url, { signal: stop.signal })
      expect(await response.json()).to.deep.equal({ usage: { total_tokens: 137 } })
      await made('release', 1)
      stop.abort(stopped())
      expect(await watch?.settled()).to.deep.equal([])
      expect(errors).to.deep.equal([])
      expect(await remaining()).to.deep.equal({ rpm: 99, tpm: withSettle ? 10_000 - 137 : 9_500, parallel: 1 })
    })
  }

  it('with settle and no in-flight policy: aborted during a 429’s pause, rejects with the reason', async () => {
    stub = await startHttpStub((_n, _req, res) => res.writeHead(429, { 'retry-after': '20' }).end('slow down'))
    const { wrapper, made, remaining } = watchedLimiter(policies.slice(0, 2))
    const errors: unknown[] = []
    const stop = new AbortController()
    const outcome = limitedFetch(wrapper, options(true, errors))(stub.url, { signal: stop.signal }).catch((e) => e)
    await made('acquire', 2)
    const reason = stopped()
    stop.abort(reason)
    expect(await outcome).to.equal(reason)
    expect(await watch?.settled()).to.deep.equal([])
    expect(errors).to.deep.equal([])
    expect(await remaining()).to.deep.equal({ rpm: 99, tpm: 10_000 })
  })

  it('with settle and no in-flight policy: settled from the headers, aborted before the body is read', async () => {
    stub = await startHttpStub((_n, _req, res) => res.writeHead(200, { 'x-tokens': '7' }).write('{"usage":'))
    const { wrapper, remaining } = watchedLimiter(policies.slice(0, 2))
    const errors: unknown[] = []
    const settle = (response: Response) => ({ tpm: Number(response.headers.get('x-tokens')) })
    const llm = limitedFetch(wrapper, { ...options(true, errors), settle })
    const stop = new AbortController()
    const response = await llm(stub.url, { signal: stop.signal })
    // The settle is done with its copy (and cancelled it) before the caller reads a byte.
    while ((await remaining()).tpm !== 10_000 - 7) await new Promise((resolve) => setImmediate(resolve))
    const reason = stopped()
    stop.abort(reason)
    expect(await watch?.settled()).to.deep.equal([])
    expect(await response.text().catch((error: unknown) => error)).to.equal(reason)
    expect(errors).to.deep.equal([])
    expect(await remaining()).to.deep.equal({ rpm: 99, tpm: 10_000 - 7 })
  })
})
