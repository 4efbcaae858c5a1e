import { isFleetlimitError } from '@fleetlimit/core'
import { expect } from 'chai'
import { createDecisions } from '../../../../packages/core/src/store/memory/decisions.js'
import { createHolds } from '../../../../packages/core/src/store/memory/holds.js'
import { createKeyTable, type EntrySlot } from '../../../../packages/core/src/store/memory/key-table.js'
import { createSlots } from '../../../../packages/core/src/store/memory/slots.js'
import type { WindowRequest } from '../../../../packages/core/src/store/store.js'
import { thrown } from '../../../support/thrown.js'

const log = (key: string, cost = 1, extra: Partial<WindowRequest> = {}): WindowRequest => ({
  key,
  limit: 3,
  windowMs: 1_000,
  cost,
  ...extra,
})

function setUp() {
  let now = 1_000
  const table = createKeyTable(10)
  const holds = createHolds(10)
  const housekept: [number, number][] = []
  const clock = () => now
  const slots = createSlots(table, clock)
  const sweep = { housekeep: (at: number, adding: number) => void housekept.push([at, adding]) }
  const decisions = createDecisions(table, holds, slots, sweep, clock)
  return { decisions, table, holds, housekept, at: (ms: number) => (now = ms) }
}

describe('memory store decisions (store/memory/decisions.ts)', () => {
  it('one sliding-log window: admits while the cost fits, records at the clock, then denies with the exact wait', () => {
    const { decisions, housekept, at } = setUp()
    expect(decisions.decide([log('k', 2)], true)).to.deep.equal([
      { allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 1_000, now: 1_000, recorded: 1_000 },
    ])
    expect(housekept).to.deep.equal([[1_000, 1]])
    at(1_400)
    expect(decisions.decide([log('k', 1)], true)[0]).to.include({ allowed: true, remaining: 0, recorded: 1_400 })
    expect(decisions.decide([log('k', 1)], true)).to.deep.equal([
      { allowed: false, remaining: 0, retryAfterMs: 600, resetMs: 1_000, now: 1_400 },
    ])
  })

  it('a peek records nothing and leaves no entry for an unknown key', () => {
    const { decisions, table } = setUp()
    expect(decisions.decide([log('k')], false)).to.deep.equal([
      { allowed: true, remaining: 3, retryAfterMs: 0, resetMs: 0, now: 1_000 },
    ])
    expect(table.entries.size).to.equal(0)
  })

  it('decideLog decides as decide does, through an entry slot kept between calls', () => {
    const { decisions, table } = setUp()
    const slot: EntrySlot = { entry: undefined }
    expect(decisions.decideLog(log('k', 3), true, 1_000, slot)).to.deep.equal({
      allowed: true,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 1_000,
      now: 1_000,
      recorded: 1_000,
    })
    expect(slot.entry).to.equal(table.entries.get('k'))
    expect(decisions.decideLog(log('k'), true, 1_200, slot)).to.deep.equal(decisions.decide([log('k')], true, 1_200)[0])
  })

  it('a denial with blockMs holds the key; a held key is denied with the wait until the hold ends', () => {
    const { decisions, holds } = setUp()
    decisions.decide([log('k', 3)], true)
    expect(decisions.decide([log('k', 1, { blockMs: 5_000 })], true)[0]).to.include({
      allowed: false,
      remaining: 0,
      retryAfterMs: 5_000,
    })
    expect(holds.heldUntil('k', 1_000)).to.equal(6_000)
    // Past the window the units are gone, and the hold still denies; a peek reports the window's own room.
    expect(decisions.decide([log('k')], true, 3_000)[0]).to.include({
      allowed: false,
      remaining: 0,
      retryAfterMs: 3_000,
    })
    expect(decisions.decide([log('k')], false, 3_000)[0]).to.include({
      allowed: false,
      remaining: 3,
      retryAfterMs: 3_000,
    })
  })

  it('several windows admit together or none records', () => {
    const { decisions, table } = setUp()
    const wide = (cost: number) => log('wide', cost, { limit: 10 })
    decisions.decide([log('narrow', 2)], true)
    const denied = decisions.decide([wide(2), log('narrow', 2)], true)
    expect(denied.map((r) => r.allowed)).to.deep.equal([true, false])
    // The window with room records nothing, and leaves no empty entry behind.
    expect(denied[0]).to.deep.equal({ allowed: true, remaining: 10, retryAfterMs: 0, resetMs: 0, now: 1_000 })
    expect(table.entries.has('wide')).to.equal(false)
    const admitted = decisions.decide([wide(1), log('narrow', 1)], true)
    expect(admitted).to.deep.equal([
      { allowed: true, remaining: 9, retryAfterMs: 0, resetMs: 1_000, now: 1_000, recorded: 1_000 },
      { allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1_000, now: 1_000, recorded: 1_000 },
    ])
  })

  it('a shadow window does not decide a call of several, and records what it would have admitted', () => {
    const { decisions } = setUp()
    const results = decisions.decide([log('main', 1), log('shadow', 5, { shadow: true })], true)
    expect(results.map((r) => [r.allowed, r.recorded])).to.deep.equal([
      [true, 1_000],
      [false, undefined],
    ])
  })

  it('a slot window beside a log window takes one slot, whatever the cost', () => {
    const { decisions } = setUp()
    const results = decisions.decide([log('rate', 2), log('slots', 2, { slots: true, limit: 1 })], true)
    expect(results[1]).to.deep.equal({
      allowed: true,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 1_000,
      now: 1_000,
      recorded: 1_000,
    })
    const full = decisions.decide([log('rate', 1), log('slots', 1, { slots: true, limit: 1 })], true, 1_200)
    expect(full.map((r) => r.allowed)).to.deep.equal([true, false])
    expect(full[1]).to.include({ retryAfterMs: 800 })
  })

  it('a bucketed window is decided alone', () => {
    const { decisions, table } = setUp()
    const bucketed = log('b', 2, { buckets: 4 })
    expect(decisions.decide([bucketed], true)[0]).to.include({ allowed: true, remaining: 1, recorded: 1_000 })
    expect(decisions.decide([bucketed], true)[0]).to.include({ allowed: false })
    const error = thrown(() => decisions.decide([bucketed, log('other')], true))
    expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE'), String(error)).to.equal(true)
    expect((error as Error).message).to.equal(
      'fleetlimit: a bucketed window is decided alone, not with other windows in one call',
    )
    expect(table.entries.has('other')).to.equal(false)
  })
})
