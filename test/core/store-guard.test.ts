import { expect } from 'chai'
import { createCallGate } from '../../packages/core/src/store/call-gate.js'
import { createServerClock } from '../../packages/core/src/store/server-clock.js'
import { isServerFailure } from '../../packages/core/src/store/server-failure.js'

/** An error as ioredis makes one for an error reply. */
function replyError(message: string): Error {
  const error = new Error(message)
  error.name = 'ReplyError'
  return error
}

describe('the call gate: calls in flight to one server', () => {
  it('lets maxInFlight calls through at once, then hands each freed slot to the longest waiter', async () => {
    const gate = createCallGate(2)
    expect(gate.enter()).to.equal(undefined)
    expect(gate.enter()).to.equal(undefined)
    const order: number[] = []
    const waiting = [1, 2, 3].map((n) => (gate.enter() as Promise<void>).then(() => order.push(n)))
    expect(gate).to.include({ inFlight: 2, waiting: 3 })
    gate.leave()
    await waiting[0]
    expect(order).to.deep.equal([1])
    expect(gate).to.include({ inFlight: 2, waiting: 2 })
    gate.leave()
    gate.leave()
    await Promise.all(waiting)
    expect(order).to.deep.equal([1, 2, 3])
    gate.leave()
    gate.leave()
    expect(gate).to.include({ inFlight: 0, waiting: 0 })
    expect(gate.enter(), 'a free slot is taken at once').to.equal(undefined)
  })

  it('serves 100,000 waiters first-in first-out with a bounded queue array', async () => {
    const gate = createCallGate(1)
    gate.enter()
    let served = 0
    let inOrder = true
    const all = Array.from({ length: 100_000 }, (_, i) =>
      (gate.enter() as Promise<void>).then(() => {
        if (served++ !== i) inOrder = false
        gate.leave()
      }),
    )
    gate.leave()
    await Promise.all(all)
    expect({ served, inOrder }).to.deep.equal({ served: 100_000, inOrder: true })
    expect(gate).to.include({ inFlight: 0, waiting: 0 })
  })
})

describe('the server clock estimate', () => {
  it('knows nothing before a reply, then errs early: the tightest lower bound of the offset', () => {
    const clock = createServerClock()
    expect(clock.serverTimeAt(100)).to.equal(undefined)
    // Server 1,000 ms ahead; replies received 5 ms and then 1 ms after the server stamped them.
    clock.observe(1_000 + 10, 15)
    expect(clock.serverTimeAt(100)).to.equal(1_095)
    clock.observe(1_000 + 20, 21)
    expect(clock.serverTimeAt(100)).to.equal(1_099)
    clock.observe(1_000 + 30, 40)
    expect(clock.serverTimeAt(100), 'a slower reply does not loosen the bound').to.equal(1_099)
  })

  it('follows a server clock that stepped back, within two spans of 10 s', () => {
    const clock = createServerClock()
    clock.observe(5_000, 0)
    clock.observe(3_000 + 10_001, 10_001)
    expect(clock.serverTimeAt(0), 'the previous span still counts').to.equal(5_000)
    clock.observe(3_000 + 20_002, 20_002)
    expect(clock.serverTimeAt(0)).to.equal(3_000)
  })
})

describe('which store errors count against the server (the breaker)', () => {
  it('a lost connection, a missed deadline and a server-state reply do; a reply about a key or a script does not', () => {
    for (const error of [
      new Error('Connection is closed.'),
      new Error('no answer within timeoutMs (100 ms)'),
      replyError('LOADING Redis is loading the dataset in memory'),
      replyError('MASTERDOWN Link with MASTER is down'),
      replyError('CLUSTERDOWN The cluster is down'),
      replyError('TRYAGAIN Multiple keys request during rehashing of slot'),
      replyError('BUSY Redis is busy running a script'),
      replyError('NOAUTH Authentication required.'),
      replyError('WRONGPASS invalid username-password pair or user is disabled.'),
    ]) {
      expect(isServerFailure(error), error.message).to.equal(true)
    }
    for (const error of [
      replyError('WRONGTYPE Operation against a key holding the wrong kind of value'),
      replyError('NOPERM this user has no permissions to access one of the keys used as arguments'),
      replyError("OOM command not allowed when used memory > 'maxmemory'."),
      replyError("READONLY You can't write against a read only replica."),
      replyError('ERR user_script:1: Script attempted to access nonexistent global variable'),
    ]) {
      expect(isServerFailure(error), error.message).to.equal(false)
    }
  })
})
