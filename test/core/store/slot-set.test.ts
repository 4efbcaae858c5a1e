import { expect } from 'chai'
import { SlotSet } from '../../../packages/core/src/store/slot-set.js'

describe('SlotSet', () => {
  it('counts the slots live at a time: one ends at its end, exclusive', () => {
    const slots = new SlotSet()
    slots.take(1, 1_000)
    slots.take(2, 1_500)
    expect(slots.held(999)).to.equal(2)
    expect(slots.held(1_000)).to.equal(1)
    expect(slots.isEmpty(1_499)).to.equal(false)
    expect(slots.isEmpty(1_500)).to.equal(true)
  })

  it('frees a live slot once; an ended, freed or unknown one was not held', () => {
    const slots = new SlotSet()
    slots.take(1, 1_000)
    slots.take(2, 500)
    expect(slots.free(1, 100)).to.equal(true)
    expect(slots.free(1, 100)).to.equal(false)
    expect(slots.free(2, 500)).to.equal(false)
    expect(slots.free(3, 0)).to.equal(false)
    expect(slots.held(0)).to.equal(0)
  })

  it('extends a live slot, never shortens it, and cannot revive an ended one', () => {
    const slots = new SlotSet()
    slots.take(1, 1_000)
    expect(slots.extend(1, 2_000, 500)).to.equal(true)
    expect(slots.extend(1, 1_200, 600)).to.equal(true)
    expect(slots.held(1_999)).to.equal(1)
    expect(slots.extend(1, 5_000, 2_000)).to.equal(false)
    expect(slots.extend(9, 5_000, 0)).to.equal(false)
  })

  it('answers one more slot: room left, or the wait for the soonest end; the reset runs to the latest end', () => {
    const slots = new SlotSet()
    slots.take(1, 1_300.5)
    slots.take(2, 1_800)
    expect(slots.result(1_000, 3, slots.held(1_000), false)).to.deep.equal({
      allowed: true,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: 800,
      now: 1_000,
    })
    slots.take(3, 2_000)
    expect(slots.result(1_000, 3, 2, true)).to.deep.equal({
      allowed: true,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 1_000,
      now: 1_000,
    })
    expect(slots.result(1_000, 3, slots.held(1_000), false)).to.deep.equal({
      allowed: false,
      remaining: 0,
      retryAfterMs: 301,
      resetMs: 1_000,
      now: 1_000,
    })
    expect(new SlotSet().result(5, 1, 0, false)).to.deep.equal({
      allowed: true,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: 0,
      now: 5,
    })
  })
})
