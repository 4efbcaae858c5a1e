import { expect } from 'chai'
import { RateLimitTimeoutError } from '../../../packages/core/src/common/errors.js'
import type { Decision } from '../../../packages/core/src/limiter/decision.js'
import {
  batch,
  head,
  type KeyQueue,
  knownUntil,
  leave,
  MAX_BATCH,
  nextAsk,
  type Waiter,
} from '../../../packages/core/src/limiter/key-queue.js'

/** A waiter that records how it was answered. */
function waiter(cost: number, deadline = Number.POSITIVE_INFINITY) {
  const answer: { decision?: Decision; error?: unknown } = {}
  const w: Waiter = {
    cost,
    costs: undefined,
    deadline,
    maxWaitMs: 1_000,
    settled: false,
    resolve: (decision) => {
      answer.decision = decision
    },
    reject: (error) => {
      answer.error = error
    },
  }
  return { w, answer }
}

function queueOf(waiters: Waiter[], fields: Partial<KeyQueue<string>> = {}): KeyQueue<string> {
  return {
    target: 'k',
    waiters,
    live: waiters.filter((w) => !w.settled).length,
    budget: undefined,
    denials: [],
    wakeAt: 0,
    firmAt: 0,
    wake: undefined,
    freed: 0,
    ...fields,
  }
}

describe('key-queue: one key’s queue of acquire() waiters', () => {
  it('batch: the head alone while the room is unknown or too small for it', () => {
    const [a, b] = [waiter(2).w, waiter(1).w]
    expect(batch(queueOf([a, b]), a)).to.deep.equal([a])
    expect(batch(queueOf([a, b], { budget: 1 }), a)).to.deep.equal([a])
  })

  it('batch: waiters in order while their costs fit the budget, stopping at the first that does not', () => {
    const [a, b, c, d] = [waiter(2).w, waiter(3).w, waiter(4).w, waiter(1).w]
    // 2 + 3 fit in 6; 4 does not, and the cheaper waiter after it does not overtake it.
    expect(batch(queueOf([a, b, c, d], { budget: 6 }), a)).to.deep.equal([a, b])
  })

  it(`batch: at most MAX_BATCH (${MAX_BATCH}) waiters, skipping settled ones`, () => {
    const left = waiter(1).w
    left.settled = true
    const waiters = [left, ...Array.from({ length: MAX_BATCH + 5 }, () => waiter(1).w)]
    const chosen = batch(queueOf(waiters, { budget: 1_000 }), waiters[1] as Waiter)
    expect(chosen).to.have.length(MAX_BATCH)
    expect(chosen).to.not.include(left)
    expect(chosen[0]).to.equal(waiters[1])
  })

  it('knownUntil: the latest wait of the denials of an equal or smaller cost; a larger cost says nothing', () => {
    const queue = queueOf([], {
      denials: [
        { cost: 1, until: 100, firm: 90 },
        { cost: 3, until: 300, firm: 250 },
        { cost: 5, until: 900, firm: 900 },
      ],
    })
    expect(knownUntil(queue, 0)).to.equal(undefined)
    expect(knownUntil(queue, 1)).to.deep.equal({ until: 100, firm: 90 })
    expect(knownUntil(queue, 4)).to.deep.equal({ until: 300, firm: 250 })
    expect(knownUntil(queue, 5)).to.deep.equal({ until: 900, firm: 900 })
  })

  it('head: drops settled waiters from the front and returns the first live one', () => {
    const [a, b, c] = [waiter(1).w, waiter(1).w, waiter(1).w]
    a.settled = true
    b.settled = true
    const queue = queueOf([a, b, c])
    expect(head(queue)).to.equal(c)
    expect(queue.waiters).to.deep.equal([c])
    expect(head(queueOf([]))).to.equal(undefined)
  })

  it('nextAsk: asks now with no known denial; else times out each waiter whose deadline is before the firm wait', () => {
    expect(nextAsk(queueOf([waiter(1).w], { denials: [] }))).to.equal(undefined)
    const first = waiter(1, 10)
    const second = waiter(1, 1_000)
    const third = waiter(1, 50)
    const queue = queueOf([first.w, second.w, third.w], { denials: [{ cost: 1, until: 200, firm: 100 }] })
    expect(nextAsk(queue)).to.equal(200)
    expect(first.answer.error).to.be.instanceOf(RateLimitTimeoutError)
    expect(third.answer.error).to.be.instanceOf(RateLimitTimeoutError)
    expect(second.answer).to.deep.equal({})
    expect(queue.live).to.equal(1)
    expect(queue.firmAt).to.equal(100)
  })

  it('leave: settles a waiter once, and wakes a sleeping queue when the head left', () => {
    const [a, b] = [waiter(1), waiter(1)]
    let woken = 0
    const queue = queueOf([a.w, b.w], { wake: () => woken++ })
    leave(queue, b.w, () => b.w.reject('gone'))
    expect([woken, queue.live, b.answer.error]).to.deep.equal([0, 1, 'gone'])
    leave(queue, a.w, () => a.w.reject('first'))
    expect([woken, queue.live, a.answer.error]).to.deep.equal([1, 0, 'first'])
    leave(queue, a.w, () => a.w.reject('again'))
    expect([queue.live, a.answer.error]).to.deep.equal([0, 'first'])
  })
})
