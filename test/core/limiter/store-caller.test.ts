import { expect } from 'chai'
import sinon from 'sinon'
import { createEmitter } from '../../../packages/core/src/common/emitter.js'
import { isFleetlimitError, StoreError } from '../../../packages/core/src/common/errors.js'
import type { LimiterEvents } from '../../../packages/core/src/limiter/limiter-types.js'
import { createStoreCaller } from '../../../packages/core/src/limiter/store-caller.js'
import { DeadlineExceeded, ShortCircuit } from '../../../packages/core/src/store/guarded-call.js'
import { memoryStore } from '../../../packages/core/src/store/memory-store.js'
import { createServerSet, guardStore, serversOf } from '../../../packages/core/src/store/server-set.js'
import { STORE, type Store } from '../../../packages/core/src/store/store.js'

const flush = () => new Promise<void>((resolve) => setImmediate(resolve))

/** A remote store whose consume never answers, with the guards a Redis store has. */
function silentStore(connected = true): Store {
  const store: Store = {
    [STORE]: true,
    consume: () => new Promise(() => {}),
    peek: () => new Promise(() => {}),
    reset: async () => {},
    hold: async () => {},
    isConnected: () => connected,
    readySince: () => 0,
    lastError: () => new Error('connect ECONNREFUSED 127.0.0.1:1'),
  }
  return guardStore(store, createServerSet({ breaker: { failureThreshold: 2 } }))
}

function caller(store: Store, timeoutMs = 50) {
  const logger = { warn: sinon.spy(), info: sinon.spy() }
  const events = createEmitter<LimiterEvents>()
  const errors: string[] = []
  events.on('storeError', (_error, kind) => errors.push(kind))
  return {
    logger,
    errors,
    caller: createStoreCaller(store, { policyName: 'p', mode: 'failing closed', timeoutMs, logger, events }),
  }
}

describe('store caller (fake timers)', () => {
  let clock: sinon.SinonFakeTimers
  beforeEach(() => {
    clock = sinon.useFakeTimers({ now: 0, toFake: ['setTimeout', 'clearTimeout', 'performance'] })
  })
  afterEach(() => clock.restore())

  it('calls an in-process store with no timer and no deadline, and counts the call', async () => {
    const { caller: c } = caller(memoryStore())
    const seen: number[] = []
    const answer = c.ask('k', async (deadline) => {
      seen.push(deadline.at)
      expect(clock.countTimers(), 'no timer while the call runs').to.equal(0)
      return 'ok'
    })
    expect(await answer).to.equal('ok')
    expect(seen).to.deep.equal([Number.POSITIVE_INFINITY])
    expect(c.stats()).to.deep.equal({ storeCalls: 1, storeErrors: 0, timeouts: 0, shortCircuits: 0 })
  })

  it('gives up a remote call at timeoutMs: a timeout, counted, logged once per outage', async () => {
    const store = silentStore()
    const { caller: c, logger, errors } = caller(store)
    const results = [1, 2].map(() => c.ask('k', () => new Promise<never>(() => {})).catch((e: unknown) => e))
    expect(clock.countTimers(), 'one timer for both calls').to.equal(1)
    await clock.tickAsync(50)
    await flush()
    const [first, second] = await Promise.all(results)
    expect(first).to.be.instanceOf(DeadlineExceeded)
    expect(second).to.be.instanceOf(DeadlineExceeded)
    const failures = [c.failure(first, 'k'), c.failure(second, 'k')]
    expect(failures.every((f) => f instanceof StoreError && isFleetlimitError(f, 'ERR_FLEETLIMIT_STORE'))).to.equal(
      true,
    )
    expect(errors).to.deep.equal(['timeout', 'timeout'])
    expect(c.stats()).to.deep.equal({ storeCalls: 2, storeErrors: 2, timeouts: 2, shortCircuits: 0 })
    expect(logger.warn.callCount).to.equal(1)
    expect(logger.warn.firstCall.args[0]).to.equal(
      'fleetlimit: no answer within timeoutMs (50 ms); policy "p" is failing closed until it recovers.',
    )
    expect(serversOf(store)?.for('k').breaker.state, 'two stalled calls open the breaker').to.equal('open')
  })

  it('sends nothing to a disconnected store: a short circuit that quotes the client’s last error', async () => {
    const { caller: c, errors } = caller(silentStore(false))
    const error = await c.ask('k', () => Promise.resolve('never')).catch((e: unknown) => e)
    expect(error).to.be.instanceOf(ShortCircuit)
    expect(c.failure(error, 'k').message).to.equal(
      'fleetlimit: the store failed a decision for policy "p": the store is not connected (the client\'s last error: connect ECONNREFUSED 127.0.0.1:1)',
    )
    expect(errors).to.deep.equal(['short-circuit'])
    expect(c.stats()).to.deep.equal({ storeCalls: 0, storeErrors: 0, timeouts: 0, shortCircuits: 1 })
    expect(clock.countTimers()).to.equal(0)
  })
})
