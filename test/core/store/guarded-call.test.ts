import { expect } from 'chai'
import sinon from 'sinon'
import {
  type Connection,
  createRunBefore,
  type Deadline,
  DeadlineExceeded,
  DeadlineQueue,
  guardedCall,
  ShortCircuit,
} from '../../../packages/core/src/store/guarded-call.js'
import { createServerSet } from '../../../packages/core/src/store/server-set.js'

// Fake setTimeout with performance.now() faked too: the queue reads the time from it. setImmediate stays real, as
// in the event loop: a call past its deadline is given up in the check phase after its timer, which `flush` runs.
const TIMEOUT_MS = 100
const flush = () => new Promise<void>((resolve) => setImmediate(resolve))

/** A call the test answers: `answer` and `fail` settle it; `deadline` is what the store was given. */
function heldCall<T>() {
  const held: { deadline?: Deadline; answer?: (value: T) => void; fail?: (error: unknown) => void } = {}
  const call = (deadline: Deadline) =>
    new Promise<T>((resolve, reject) => {
      held.deadline = deadline
      held.answer = resolve
      held.fail = reject
    })
  return { held, call }
}

/** How a promise ended, read without awaiting it. */
function track<T>(promise: Promise<T>) {
  const state: { value?: T; error?: unknown; settled: boolean } = { settled: false }
  promise.then(
    (value) => Object.assign(state, { value, settled: true }),
    (error: unknown) => Object.assign(state, { error, settled: true }),
  )
  return state
}

const noObserver = { sent: () => {}, answered: () => {} }

describe('guardedCall and its DeadlineQueue (fake timers)', () => {
  let clock: sinon.SinonFakeTimers
  let ready: number | undefined
  const connection: Connection = { connected: () => true, readySince: () => ready }
  beforeEach(() => {
    clock = sinon.useFakeTimers({ now: 0, toFake: ['setTimeout', 'clearTimeout', 'performance'] })
    ready = 0
  })
  afterEach(() => clock.restore())

  it('gives up a call timeoutMs after it was sent, not a millisecond earlier', async () => {
    const queue = new DeadlineQueue(TIMEOUT_MS, connection)
    const { call } = heldCall<string>()
    const result = track(guardedCall(undefined, queue, call, noObserver))
    await clock.tickAsync(TIMEOUT_MS - 1)
    await flush()
    expect(result.settled).to.equal(false)
    await clock.tickAsync(1)
    await flush()
    expect(result.error).to.be.instanceOf(DeadlineExceeded)
    expect((result.error as Error).message).to.equal('fleetlimit: no answer within timeoutMs (100 ms)')
  })

  it('keeps one timer for 100 calls in flight, left to run out once they are answered', async () => {
    const queue = new DeadlineQueue(TIMEOUT_MS, connection)
    const calls = Array.from({ length: 100 }, () => heldCall<number>())
    const results = calls.map(({ call }) => track(guardedCall(undefined, queue, call, noObserver)))
    expect(clock.countTimers()).to.equal(1)
    for (const [i, { held }] of calls.entries()) held.answer?.(i)
    await clock.tickAsync(0)
    expect(results.map((r) => r.value)).to.deep.equal(calls.map((_, i) => i))
    expect(clock.countTimers(), 'not cleared: the next call may use it').to.equal(1)
    await clock.tickAsync(TIMEOUT_MS)
    expect(clock.countTimers(), 'not armed again with nothing in flight').to.equal(0)
  })

  it('arms one timer per timeoutMs for calls made one after another, not one per call', async () => {
    const queue = new DeadlineQueue(TIMEOUT_MS, connection)
    // Counted by hand: a sinon spy would stay in sinon's default sandbox, whose later restore() would put this
    // test's fake setTimeout back.
    const fake = globalThis.setTimeout
    const armed = { callCount: 0 }
    globalThis.setTimeout = ((...args: Parameters<typeof setTimeout>) => {
      armed.callCount++
      return fake(...args)
    }) as typeof setTimeout
    try {
      for (let i = 0; i < 50; i++) {
        const { held, call } = heldCall<number>()
        const result = track(guardedCall(undefined, queue, call, noObserver))
        held.answer?.(i)
        await clock.tickAsync(1)
        expect(result.value).to.equal(i)
      }
      expect(armed.callCount, '50 calls in 50 ms').to.equal(1)
      await clock.tickAsync(TIMEOUT_MS)
      expect(armed.callCount, 'nothing in flight when it ran: not armed again').to.equal(1)
    } finally {
      globalThis.setTimeout = fake
    }
  })

  it('gives up each call of a stream at its own deadline: those sent 10 ms apart end 10 ms apart', async () => {
    const queue = new DeadlineQueue(TIMEOUT_MS, connection)
    const endedAt: number[] = []
    for (let i = 0; i < 5; i++) {
      guardedCall(undefined, queue, heldCall<void>().call, noObserver).catch(() => endedAt.push(performance.now()))
      await clock.tickAsync(10)
    }
    await clock.tickAsync(TIMEOUT_MS - 50)
    await flush()
    for (let i = 0; i < 4; i++) {
      await clock.tickAsync(10)
      await flush()
    }
    expect(endedAt).to.deep.equal([100, 110, 120, 130, 140])
  })

  it('counts a call sent while the connection was being made from when it was ready: the full timeoutMs', async () => {
    ready = Number.POSITIVE_INFINITY
    const queue = new DeadlineQueue(TIMEOUT_MS, connection)
    const { held, call } = heldCall<string>()
    const result = track(guardedCall(undefined, queue, call, noObserver))
    await clock.tickAsync(60)
    ready = performance.now()
    await clock.tickAsync(TIMEOUT_MS - 1)
    await flush()
    expect(result.settled, 'at 99 ms after ready').to.equal(false)
    expect(held.deadline?.at, 'the deadline the store reads moved with it').to.equal(60 + TIMEOUT_MS)
    await clock.tickAsync(1)
    await flush()
    expect(result.error).to.be.instanceOf(DeadlineExceeded)
  })

  it('gives a fresh timeoutMs, once, when its timer ran late because the event loop was blocked', async () => {
    const queue = new DeadlineQueue(TIMEOUT_MS, connection)
    const { call } = heldCall<string>()
    const result = track(guardedCall(undefined, queue, call, noObserver))
    // The loop blocked for 300 ms: the timer runs at 300 ms, 200 ms after the deadline.
    clock.jump(300)
    expect(performance.now()).to.equal(300)
    await flush()
    expect(result.settled, 'not given up at the late timer').to.equal(false)
    await clock.tickAsync(TIMEOUT_MS - 1)
    await flush()
    expect(result.settled).to.equal(false)
    await clock.tickAsync(1)
    await flush()
    expect(result.error, 'given up a fresh timeoutMs after the late timer').to.be.instanceOf(DeadlineExceeded)
  })

  it('reads a reply that is already in the socket when the deadline passes, rather than give up', async () => {
    const queue = new DeadlineQueue(TIMEOUT_MS, connection)
    const { held, call } = heldCall<string>()
    const result = track(guardedCall(undefined, queue, call, noObserver))
    await clock.tickAsync(TIMEOUT_MS - 1)
    // The timer runs at 100 ms; the reply read in the poll phase after it (before the setImmediate) wins.
    clock.tick(1)
    held.answer?.('read')
    await flush()
    expect(result.value).to.equal('read')
    expect(clock.countTimers()).to.equal(0)
  })

  it('frees its gate slot when it gives up a call, so the call waiting behind it is sent then', async () => {
    const servers = createServerSet({ maxInFlight: 1 })
    const guard = servers.for('k')
    const queue = new DeadlineQueue(TIMEOUT_MS, connection)
    const first = heldCall<string>()
    const second = heldCall<string>()
    const firstResult = track(guardedCall(guard, queue, first.call, noObserver))
    const secondResult = track(guardedCall(guard, queue, second.call, noObserver))
    await clock.tickAsync(0)
    expect([guard.gate.inFlight, guard.gate.waiting]).to.deep.equal([1, 1])
    expect(second.held.deadline, 'not sent while the slot is taken').to.equal(undefined)
    await clock.tickAsync(TIMEOUT_MS)
    await flush()
    expect(firstResult.error).to.be.instanceOf(DeadlineExceeded)
    expect(second.held.deadline?.at, 'sent when the first was given up, with its own timeoutMs').to.equal(
      100 + TIMEOUT_MS,
    )
    second.held.answer?.('second')
    await clock.tickAsync(0)
    expect(secondResult.value).to.equal('second')
    expect([guard.gate.inFlight, guard.gate.waiting]).to.deep.equal([0, 0])
    // A stalled server's late answer to the first changes nothing.
    first.held.answer?.('late')
    await clock.tickAsync(0)
    expect(firstResult.value).to.equal(undefined)
  })

  it('sends nothing while the client is disconnected: a short circuit, counted by the breaker', async () => {
    const servers = createServerSet({ breaker: { failureThreshold: 1 } })
    const guard = servers.for('k')
    const queue = new DeadlineQueue(TIMEOUT_MS, { connected: () => false, readySince: () => undefined })
    const { held, call } = heldCall<string>()
    const result = track(guardedCall(guard, queue, call, noObserver))
    await clock.tickAsync(0)
    expect(result.error).to.be.instanceOf(ShortCircuit)
    expect(held.deadline).to.equal(undefined)
    expect(guard.breaker.state).to.equal('open')
    expect(clock.countTimers()).to.equal(0)
  })

  it('stamps the server called when it sends or refuses a call, and answered when the store read the reply', async () => {
    const servers = createServerSet({ breaker: { failureThreshold: 1 } })
    await clock.tickAsync(5)
    const guard = servers.for('k')
    expect([guard.calledAt, guard.answeredAt]).to.deep.equal([5, Number.NEGATIVE_INFINITY])
    const queue = new DeadlineQueue(TIMEOUT_MS, connection)
    await clock.tickAsync(10)
    const { held, call } = heldCall<string>()
    const answered = guardedCall(guard, queue, call, noObserver)
    expect([guard.calledAt, held.deadline?.sentAt]).to.deep.equal([15, 15])
    await clock.tickAsync(20)
    // The store read the reply at 35 (runBefore sets receivedAt), and the guard sees it settle later.
    ;(held.deadline as Deadline).receivedAt = 35
    await clock.tickAsync(7)
    held.answer?.('ok')
    expect(await answered).to.equal('ok')
    expect(guard.answeredAt).to.equal(35)
    // A reply no store timed: the guard reads the clock as it settles.
    const next = heldCall<string>()
    const second = guardedCall(guard, queue, next.call, noObserver)
    await clock.tickAsync(3)
    next.held.answer?.('ok')
    await second
    expect(guard.answeredAt).to.equal(45)
    // Refused by an open breaker: still a call to the server.
    guard.breaker.failure()
    await clock.tickAsync(1)
    const refused = track(guardedCall(guard, queue, call, noObserver))
    await clock.tickAsync(0)
    expect(refused.error).to.be.instanceOf(ShortCircuit)
    expect(guard.calledAt).to.equal(46)
  })

  it('runBefore writes when it read each reply into the deadline, the retry’s after a late refusal too', async () => {
    const runBefore = createRunBefore(() => '', connection, false)
    const deadline: Deadline = { at: 1_000, sentAt: 0 }
    // The first reply says the call reached the server after its deadline (-1); the retry's is an answer.
    const statuses = [-1, 1]
    const sentWith: number[] = []
    const call = async (deadlineUs: number) => {
      sentWith.push(deadlineUs)
      await clock.tickAsync(5)
      return { status: statuses.shift() as number, nowUs: performance.now() * 1000 }
    }
    const reply = await runBefore(call, 'k', deadline)
    expect([reply.status, deadline.receivedAt, sentWith.length]).to.deep.equal([1, 10, 2])
    // With no deadline, the server is sent none (0).
    statuses.push(1)
    expect((await runBefore(call, 'k', undefined)).status).to.equal(1)
    expect([sentWith.length, sentWith[2]]).to.deep.equal([3, 0])
  })

  it('runBefore sends a call to the server its deadline names, with no lookup; a call with none is looked up', async () => {
    const lookups: string[] = []
    const runBefore = createRunBefore(
      (key) => {
        lookups.push(key)
        return 'by key'
      },
      connection,
      false,
    )
    const sentTo: (string | undefined)[] = []
    const call = async (_deadlineUs: number, server: string | undefined) => {
      sentTo.push(server)
      return { status: 1, nowUs: performance.now() * 1000 }
    }
    await runBefore(call, 'k', { at: 1_000, sentAt: 0, server: 'guarded' })
    await runBefore(call, 'k', { at: 1_000, sentAt: 0, server: '' })
    await runBefore(call, 'k', { at: 1_000, sentAt: 0 })
    await runBefore(call, 'k', undefined)
    expect({ sentTo, lookups }).to.deep.equal({ sentTo: ['guarded', '', undefined, undefined], lookups: ['k', 'k'] })
  })
})
