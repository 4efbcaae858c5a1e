import {
  createRateLimiter,
  type Decision,
  isFleetlimitError,
  memoryStore,
  type RateLimitTimeoutError,
} from '@fleetlimit/core'
import { expect } from 'chai'
import sinon from 'sinon'

/** Settles a promise into an inspectable record without letting a rejection go unhandled. */
function track<T>(promise: Promise<T>) {
  const state: { settled: boolean; value?: T; error?: unknown } = { settled: false }
  promise.then(
    (value) => Object.assign(state, { settled: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, error }),
  )
  return state
}

describe('acquire (fake timers: the clock moves only when the test moves it)', () => {
  let clock: sinon.SinonFakeTimers

  beforeEach(() => {
    clock = sinon.useFakeTimers({ now: 1_000_000, toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] })
  })
  afterEach(() => clock.restore())

  const limiterOf = (limit: number, window: number) =>
    createRateLimiter({ store: memoryStore({ clock: () => Date.now() }), limit, window, timeoutMs: 60_000 })

  it('sleeps exactly retryAfterMs, asking the store once per wait (no polling)', async () => {
    const limiter = limiterOf(5, 500)
    const admittedAt: number[] = []
    const all = Promise.all(
      Array.from({ length: 12 }, () => limiter.acquire('k').then(() => admittedAt.push(Date.now() - 1_000_000))),
    )
    await clock.tickAsync(2_000)
    await all
    expect(admittedAt).to.deep.equal([0, 0, 0, 0, 0, 500, 500, 500, 500, 500, 1000, 1000])
    // 12 admissions and one denial before each of the two waits.
    expect(limiter.stats()).to.include({ storeCalls: 14, allowed: 12, denied: 2 })
  })

  it('serves waiters on one key first-in first-out, whatever their cost', async () => {
    const limiter = limiterOf(3, 1_000)
    await limiter.consume('k', { cost: 3 })
    const order: string[] = []
    const names = ['a', 'b', 'c', 'd', 'e', 'f']
    const costs = [2, 1, 3, 1, 1, 1]
    const all = Promise.all(
      names.map((name, i) => limiter.acquire('k', { cost: costs[i] as number }).then(() => order.push(name))),
    )
    await clock.tickAsync(10_000)
    await all
    expect(order).to.deep.equal(names)
  })

  it('rejects at once with the wait when the deadline falls before it, without waiting', async () => {
    const limiter = limiterOf(1, 1_000)
    await limiter.consume('k')
    await clock.tickAsync(200)
    const waiting = track(limiter.acquire('k', { maxWaitMs: 500 }))
    await clock.tickAsync(0)
    expect(waiting.settled, 'rejected with no time passing').to.equal(true)
    expect(isFleetlimitError(waiting.error, 'ERR_FLEETLIMIT_TIMEOUT')).to.equal(true)
    expect((waiting.error as RateLimitTimeoutError).retryAfterMs).to.equal(800)
  })

  it('rejects a waiter queued behind a sleeping head when the head’s wait passes its deadline', async () => {
    const limiter = limiterOf(1, 1_000)
    await limiter.consume('k')
    const head = track(limiter.acquire('k'))
    await clock.tickAsync(0)
    const impatient = track(limiter.acquire('k', { maxWaitMs: '100ms' }))
    const patient = track(limiter.acquire('k', { maxWaitMs: 5_000 }))
    await clock.tickAsync(0)
    expect(impatient.settled).to.equal(true)
    expect((impatient.error as RateLimitTimeoutError).retryAfterMs).to.equal(1_000)
    await clock.tickAsync(1_000)
    expect(head.value?.allowed).to.equal(true)
    expect(patient.settled).to.equal(false)
    await clock.tickAsync(1_000)
    expect(patient.value?.allowed).to.equal(true)
  })

  it('admits at the wait when the deadline allows it', async () => {
    const limiter = limiterOf(1, 1_000)
    await limiter.consume('k')
    const waiting = track(limiter.acquire('k', { maxWaitMs: 1_000 }))
    await clock.tickAsync(999)
    expect(waiting.settled).to.equal(false)
    await clock.tickAsync(1)
    expect((waiting.value as Decision).allowed).to.equal(true)
  })

  it('honours an AbortSignal: the aborted waiter rejects with its reason and the next one goes on', async () => {
    const limiter = limiterOf(1, 1_000)
    await limiter.consume('k')
    const controller = new AbortController()
    const aborted = track(limiter.acquire('k', { signal: controller.signal }))
    const next = track(limiter.acquire('k'))
    await clock.tickAsync(300)
    controller.abort(new Error('caller gave up'))
    await clock.tickAsync(0)
    expect((aborted.error as Error).message).to.equal('caller gave up')
    expect(next.settled).to.equal(false)
    await clock.tickAsync(700)
    expect(next.value?.allowed).to.equal(true)
    expect(limiter.stats().allowed, 'the aborted waiter consumed nothing').to.equal(2)
  })

  it('rejects at once when the signal is already aborted', async () => {
    const limiter = limiterOf(1, 1_000)
    const error = await limiter.acquire('k', { signal: AbortSignal.abort() }).catch((e: unknown) => e)
    expect((error as Error).name).to.equal('AbortError')
    expect(limiter.stats().decisions).to.equal(0)
  })

  it('keeps queues of different keys independent', async () => {
    const limiter = limiterOf(1, 1_000)
    await limiter.consume('a')
    const a = track(limiter.acquire('a'))
    const b = track(limiter.acquire('b'))
    await clock.tickAsync(0)
    expect(b.value?.allowed).to.equal(true)
    expect(a.settled).to.equal(false)
    await clock.tickAsync(1_000)
    expect(a.value?.allowed).to.equal(true)
  })
})
