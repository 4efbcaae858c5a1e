import { getEventListeners } from 'node:events'
import {
  createRateLimiter,
  type Decision,
  isFleetlimitError,
  memoryStore,
  type QueueFullError,
  type RateLimitTimeoutError,
  type Store,
} from '@fleetlimit/core'
import { expect } from 'chai'
import sinon from 'sinon'
import { STORE } from '../../../packages/core/src/store/store.js'

/** Settles a promise into an inspectable record without letting a rejection go unhandled. */
function track<T>(promise: Promise<T>) {
  const state: { settled: boolean; value?: T; error?: unknown } = { settled: false }
  promise.then(
    (value) => Object.assign(state, { settled: true, value }),
    (error: unknown) => Object.assign(state, { settled: true, error }),
  )
  return state
}

/** Lets every pending promise chain run (setImmediate is not faked): no timer fires meanwhile. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve))

/**
 * A memory store whose consume() calls wait until the test releases them: one release is one round trip,
 * and `inner` is the shared window, which another process may use meanwhile.
 */
function gatedStore() {
  const inner = memoryStore({ clock: () => Date.now() })
  const held: (() => void)[] = []
  const store: Store = {
    [STORE]: true,
    consume: (...args: Parameters<Store['consume']>) =>
      new Promise((resolve, reject) => held.push(() => inner.consume(...args).then(resolve, reject))),
    peek: (requests) => inner.peek(requests),
    hold: (requests, ms) => inner.hold(requests, ms),
    reset: (key) => inner.reset(key),
    refund: (requests, units, id) => inner.refund(requests, units, id),
  }
  /** Answers the held calls (all, or those at `indexes`, in that order); returns how many. */
  const release = (indexes?: readonly number[]) => {
    const calls = indexes ? indexes.map((i) => held[i] as () => void) : held.slice()
    held.splice(0, held.length, ...held.filter((call) => !calls.includes(call)))
    for (const call of calls) call()
    return calls.length
  }
  return { inner, held, store, release }
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

  it('sleeps a wait longer than a Node timer holds (30-day window) in one store call, not a 1 ms loop', async () => {
    const limiter = limiterOf(1, 30 * 86_400_000)
    await limiter.consume('k')
    const waiting = track(limiter.acquire('k'))
    await clock.tickAsync(10_000)
    expect(waiting.settled).to.equal(false)
    // The consume, and the one denial before the wait.
    expect(limiter.stats()).to.include({ storeCalls: 2, denied: 1 })
    await clock.tickAsync(30 * 86_400_000 - 10_000)
    expect(waiting.value?.allowed).to.equal(true)
    expect(limiter.stats()).to.include({ storeCalls: 3, allowed: 2 })
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

  it('adds one abort listener to a signal however many waiters share it, and removes it with the last', async () => {
    const limiter = limiterOf(1, 1_000)
    await limiter.consume('k')
    const shared = new AbortController()
    const waiters = Array.from({ length: 40 }, () => track(limiter.acquire('k', { signal: shared.signal })))
    expect(getEventListeners(shared.signal, 'abort').length).to.equal(1)
    await clock.tickAsync(1_000)
    expect(waiters.filter((w) => w.value?.allowed).length).to.equal(1)
    expect(getEventListeners(shared.signal, 'abort').length).to.equal(1)
    shared.abort(new Error('shutting down'))
    await clock.tickAsync(0)
    expect(waiters.filter((w) => (w.error as Error | undefined)?.message === 'shutting down').length).to.equal(39)
    expect(getEventListeners(shared.signal, 'abort').length).to.equal(0)

    const other = new AbortController()
    const admitted = [limiter.acquire('j', { signal: other.signal }), limiter.acquire('j', { signal: other.signal })]
    expect(getEventListeners(other.signal, 'abort').length).to.equal(1)
    await clock.tickAsync(1_000)
    expect((await Promise.all(admitted)).map((d) => d.allowed)).to.deep.equal([true, true])
    expect(getEventListeners(other.signal, 'abort').length, 'the last waiter took the listener with it').to.equal(0)
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

  it('rejects at once, with ERR_FLEETLIMIT_QUEUE_FULL, the waiters beyond maxQueue (default 1000) on one key', async () => {
    const limiter = limiterOf(1_000, 1_000)
    await limiter.consume('k', { cost: 1_000 })
    const calls = Array.from({ length: 200_000 }, () => track(limiter.acquire('k')))
    const elsewhere = track(limiter.acquire('other'))
    await clock.tickAsync(0)
    const full = calls.filter((call) => isFleetlimitError(call.error, 'ERR_FLEETLIMIT_QUEUE_FULL'))
    expect(full.length).to.equal(199_000)
    expect(
      calls.slice(0, 1_000).every((call) => !call.settled),
      'the first 1000 wait',
    ).to.equal(true)
    const error = full[0]?.error as QueueFullError
    expect(error).to.include({ queueLength: 1_000, maxQueue: 1_000 })
    expect(error.message)
      .to.match(/1000 waiters/)
      .and.match(/maxQueue/)
    expect(elsewhere.value?.allowed, 'another key has its own queue').to.equal(true)

    await clock.tickAsync(1_000)
    expect(
      calls.slice(0, 1_000).every((call) => call.value?.allowed === true),
      'the queued ones are admitted',
    ).to.equal(true)
    const after = track(limiter.acquire('k'))
    await clock.tickAsync(1_000)
    expect(after.value?.allowed, 'the queue takes waiters again once it drained').to.equal(true)
  })

  it('asks for admissible waiters together: 2000 waiters with room take far fewer round trips than waiters', async () => {
    const gate = gatedStore()
    const limiter = createRateLimiter({
      store: gate.store,
      limit: 10_000,
      window: 60_000,
      timeoutMs: 60_000,
      maxQueue: 2_000,
    })
    const order: number[] = []
    const all = Promise.all(Array.from({ length: 2_000 }, (_, i) => limiter.acquire('k').then(() => order.push(i))))
    let roundTrips = 0
    for (await flush(); gate.held.length > 0; await flush()) {
      // Each round trip answers every call in flight: the head alone first, then batches of waiters that fit.
      gate.release()
      roundTrips++
    }
    await all
    expect(order).to.deep.equal(Array.from({ length: 2_000 }, (_, i) => i))
    expect(limiter.stats()).to.include({ allowed: 2_000, denied: 0 })
    // One waiter per round trip would be 2000; the head alone, then 1999 waiters in batches of 64, are 1 + 32.
    expect(roundTrips).to.equal(33)
  })

  it('keeps the place of waiters denied in a batch: an admission goes to the earliest waiter of its cost', async () => {
    const gate = gatedStore()
    const options = { limit: 10, window: 1_000, timeoutMs: 60_000 }
    const limiter = createRateLimiter({ store: gate.store, ...options })
    const otherProcess = createRateLimiter({ store: gate.inner, ...options })
    const order: string[] = []
    const names = ['a', 'b', 'c', 'd', 'e']
    const all = Promise.all(names.map((name) => limiter.acquire('k').then(() => order.push(name))))
    await flush()
    expect(gate.release(), 'a asks alone').to.equal(1)
    await flush()
    expect(order).to.deep.equal(['a'])
    expect(gate.held.length, 'with 9 units left, b to e are asked for together').to.equal(4)
    // Another process takes 8 of the 9 units; the store then answers e first (admitted), then d, c, b (denied).
    expect((await otherProcess.consume('k', { cost: 8 })).allowed).to.equal(true)
    gate.release([3, 2, 1, 0])
    await flush()
    expect(order, "e's admission went to b, the earliest waiter").to.deep.equal(['a', 'b'])
    expect(gate.held.length, 'the queue sleeps the wait').to.equal(0)
    await clock.tickAsync(1_000)
    for (await flush(); gate.held.length > 0; await flush()) gate.release()
    await all
    expect(order).to.deep.equal(names)
    expect(limiter.stats()).to.include({ allowed: 5, denied: 3 })
  })

  it('keeps maxWaitMs as a hard deadline during a slow store call, and hands the late admission on', async () => {
    const gate = gatedStore()
    const limiter = createRateLimiter({ store: gate.store, limit: 10, window: 1_000, timeoutMs: 60_000 })
    const controller = new AbortController()
    // The head's own call is slow; the second waits behind it; the third needs 1 unit and has time.
    const head = track(limiter.acquire('k', { cost: 2, maxWaitMs: 20 }))
    const behind = track(limiter.acquire('k', { cost: 1, maxWaitMs: 20, signal: controller.signal }))
    const patient = track(limiter.acquire('k', { cost: 1, signal: controller.signal }))
    await flush()
    expect(gate.held.length).to.equal(1)
    await clock.tickAsync(19)
    expect(head.settled || behind.settled).to.equal(false)
    await clock.tickAsync(1)
    for (const gaveUp of [head, behind]) {
      expect(isFleetlimitError(gaveUp.error, 'ERR_FLEETLIMIT_TIMEOUT'), 'rejected at the 20 ms tick').to.equal(true)
      // The head's store call is still out: no denial says how long to wait, so the known wait is 0.
      expect((gaveUp.error as RateLimitTimeoutError).retryAfterMs).to.equal(0)
    }
    expect(getEventListeners(controller.signal, 'abort').length, 'the timed-out waiter stopped listening').to.equal(1)
    expect(patient.settled).to.equal(false)

    gate.release()
    await flush()
    // The head's 2 units, admitted after it left, went to the next waiter they cover: no second store call.
    expect(patient.value?.allowed).to.equal(true)
    expect(limiter.stats()).to.include({ storeCalls: 1, allowed: 1 })
    expect(gate.held.length).to.equal(0)
    expect(clock.countTimers(), 'no sleep timer; the deadline timer runs out by itself').to.equal(1)
    expect(getEventListeners(controller.signal, 'abort').length).to.equal(0)
    await clock.tickAsync(60_000)
    expect(clock.countTimers(), 'nothing left to give up: not armed again').to.equal(0)
  })
})

describe('acquire: an admission no waiter takes is refunded (fake timers)', () => {
  let clock: sinon.SinonFakeTimers
  beforeEach(() => {
    clock = sinon.useFakeTimers({ now: 1_000_000, toFake: ['setTimeout', 'clearTimeout', 'Date', 'performance'] })
  })
  afterEach(() => clock.restore())

  for (const maxWaitMs of [0, 20]) {
    it(`maxWaitMs ${maxWaitMs}: the waiter gave up before the store answered; its units go back`, async () => {
      const gate = gatedStore()
      const limiter = createRateLimiter({ store: gate.store, limit: 3, window: 60_000, timeoutMs: 60_000 })
      const gaveUp = track(limiter.acquire('k', { cost: 2, maxWaitMs }))
      await flush()
      await clock.tickAsync(maxWaitMs)
      expect(isFleetlimitError(gaveUp.error, 'ERR_FLEETLIMIT_TIMEOUT')).to.equal(true)
      expect(gate.release()).to.equal(1)
      await flush()
      expect(limiter.stats()).to.include({ allowed: 1, refundedUnits: 2 })
      expect(await limiter.peek('k')).to.include({ remaining: 3 })
    })
  }
})

describe('acquire (real timers)', () => {
  it('rejects at maxWaitMs while its store call hangs, and the admission that comes later is not lost', async () => {
    const gate = gatedStore()
    const limiter = createRateLimiter({ store: gate.store, limit: 10, window: 60_000, timeoutMs: 60_000 })
    const impatient = limiter.acquire('k', { maxWaitMs: 20 })
    const next = limiter.acquire('k')
    // The rejection is the signal: it comes while the store call is still held.
    const error = await impatient.catch((e: unknown) => e)
    expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_TIMEOUT')).to.equal(true)
    expect(gate.held.length, 'the store has not answered yet').to.equal(1)
    gate.release()
    expect((await next).allowed).to.equal(true)
    expect(limiter.stats()).to.include({ storeCalls: 1, allowed: 1 })
  })
})
