import { expect } from 'chai'
import sinon from 'sinon'
import {
  MAX_TIMER_MS,
  scheduleImmediate,
  scheduleTimeout,
  startTimer,
} from '../../../packages/core/src/common/timer.js'

describe('startTimer (fake timers, which overflow a delay past 2^31-1 ms into 1 ms as Node does)', () => {
  let clock: sinon.SinonFakeTimers
  beforeEach(() => {
    clock = sinon.useFakeTimers({ now: 0, toFake: ['setTimeout', 'clearTimeout'] })
  })
  afterEach(() => clock.restore())

  it('waits 30 days in chunks: it fires once, at 30 days to the millisecond', () => {
    const firedAt: number[] = []
    startTimer(() => firedAt.push(clock.now), 30 * 86_400_000)
    clock.tick(30 * 86_400_000 - 1)
    expect(firedAt).to.deep.equal([])
    clock.tick(1)
    expect(firedAt).to.deep.equal([30 * 86_400_000])
    clock.tick(100 * 86_400_000)
    expect(firedAt).to.have.length(1)
  })

  it('keeps at most one Node timer armed, of at most MAX_TIMER_MS', () => {
    startTimer(() => {}, 3 * MAX_TIMER_MS + 5)
    expect(clock.countTimers()).to.equal(1)
    clock.tick(MAX_TIMER_MS)
    expect(clock.countTimers()).to.equal(1)
    clock.tick(2 * MAX_TIMER_MS + 4)
    expect(clock.countTimers()).to.equal(1)
    clock.tick(1)
    expect(clock.countTimers()).to.equal(0)
  })

  it('is cancelled in any chunk, and never fires for Infinity', () => {
    let fired = 0
    const timer = startTimer(() => fired++, 2 * MAX_TIMER_MS)
    clock.tick(MAX_TIMER_MS + 10)
    timer.cancel()
    startTimer(() => fired++, Number.POSITIVE_INFINITY)
    expect(clock.countTimers()).to.equal(0)
    clock.tick(3 * MAX_TIMER_MS)
    expect(fired).to.equal(0)
  })
})

describe('startTimer (real timers)', () => {
  const armed = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length

  it('unrefs each chunk when asked: it does not keep the process alive', () => {
    const before = armed()
    const unrefd = startTimer(() => {}, 2 * MAX_TIMER_MS, { unref: true })
    const withUnrefd = armed()
    const kept = startTimer(() => {}, 2 * MAX_TIMER_MS)
    const withKept = armed()
    unrefd.cancel()
    kept.cancel()
    expect([withUnrefd - before, withKept - before]).to.deep.equal([0, 1])
  })
})

describe('scheduleTimeout (real timers)', () => {
  it('does not keep the process alive', () => {
    const armed = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length
    const before = armed()
    const timer = scheduleTimeout(() => {}, 60_000, undefined)
    const with1 = armed()
    timer.cancel()
    expect(with1 - before).to.equal(0)
  })
})

describe('scheduleTimeout and scheduleImmediate: stale once the global scheduler they used was replaced', () => {
  it('a callback armed under fake timers since restored is stale; one armed on the real timers is not', async () => {
    const clock = sinon.useFakeTimers()
    const calls: string[] = []
    const fakeTimeout = scheduleTimeout((what) => calls.push(what), 1, 'fake timeout')
    const fakeImmediate = scheduleImmediate(() => calls.push('fake immediate'))
    expect([fakeTimeout.stale, fakeImmediate.stale], 'while installed').to.deep.equal([false, false])
    clock.restore()
    expect([fakeTimeout.stale, fakeImmediate.stale], 'restored').to.deep.equal([true, true])
    let timedOut = () => {}
    const realTimeout = scheduleTimeout(
      (what) => {
        calls.push(what)
        timedOut()
      },
      0,
      'real timeout',
    )
    const realImmediate = scheduleImmediate(() => calls.push('real immediate'))
    expect([realTimeout.stale, realImmediate.stale]).to.deep.equal([false, false])
    // The fake ones would have run long before: their delays are as short, and they were armed first.
    await new Promise<void>((resolve) => {
      timedOut = resolve
    })
    await new Promise((resolve) => setImmediate(resolve))
    expect(calls.sort()).to.deep.equal(['real immediate', 'real timeout'])
  })
})
