import { isFleetlimitError } from '@fleetlimit/core'
import { expect } from 'chai'
import { createKeyTable } from '../../../../packages/core/src/store/memory/key-table.js'
import { createSlots } from '../../../../packages/core/src/store/memory/slots.js'
import type { SlotSet } from '../../../../packages/core/src/store/slot-set.js'
import type { WindowRequest } from '../../../../packages/core/src/store/store.js'

const request = (key: string): WindowRequest => ({ key, limit: 2, windowMs: 1_000, cost: 1, slots: true })

function setUp() {
  let now = 100
  const table = createKeyTable(10)
  const slots = createSlots(table, () => now)
  const setOf = (key: string) => table.entriesOf([request(key)], true)[0]?.slots as SlotSet
  return { slots, setOf, table, at: (ms: number) => (now = ms) }
}

describe('memory store slots (store/memory/slots.ts)', () => {
  it('takes a slot per call with the clock as its id, unique and increasing on the same instant or a step back', () => {
    const { slots, setOf } = setUp()
    const set = setOf('k')
    expect(slots.slotResult(set, request('k'), 0, true, 100)).to.deep.equal({
      allowed: true,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: 1_000,
      now: 100,
      recorded: 100,
    })
    expect(slots.slotResult(set, request('k'), 1, true, 100)).to.include({ allowed: true, remaining: 0, recorded: 101 })
    expect(slots.slotResult(set, request('k'), 2, true, 50)).to.include({ recorded: 102 })
    expect(slots.slotResult(set, request('k'), 0, true, 500)).to.include({ recorded: 500 })
  })

  it('a result without taking records nothing and reports the room', () => {
    const { slots, setOf } = setUp()
    const set = setOf('k')
    slots.slotResult(set, request('k'), 0, true, 100)
    expect(slots.slotResult(set, request('k'), 1, false, 300)).to.deep.equal({
      allowed: true,
      remaining: 1,
      retryAfterMs: 0,
      resetMs: 800,
      now: 300,
    })
    expect(set.held(300)).to.equal(1)
  })

  it('frees held slots, counting only live ones, and tells listeners the keys after the call returns', async () => {
    const { slots, setOf, at } = setUp()
    const a = setOf('a')
    const b = setOf('b')
    slots.slotResult(a, request('a'), 0, true, 100)
    slots.slotResult(b, request('b'), 0, true, 100)
    const heard: (readonly string[] | undefined)[] = []
    slots.onSlotFree((keys) => heard.push(keys))
    at(200)
    const freed = slots.free([
      { key: 'a', slot: 100 },
      { key: 'b', slot: 101 },
      { key: 'a', slot: 999 },
      { key: 'unknown', slot: 1 },
    ])
    expect(freed).to.equal(2)
    expect(heard).to.deep.equal([])
    await Promise.resolve()
    expect(heard).to.deep.equal([['a', 'b']])
    // Freed once: freeing again counts none and tells no one.
    expect(slots.free([{ key: 'a', slot: 100 }])).to.equal(0)
    await Promise.resolve()
    expect(heard).to.have.length(1)
  })

  it('a slot past its end is not freed', () => {
    const { slots, setOf, at } = setUp()
    slots.slotResult(setOf('a'), request('a'), 0, true, 100)
    at(1_100)
    expect(slots.free([{ key: 'a', slot: 100 }])).to.equal(0)
  })

  it('extends live slots from now, never shortening them', () => {
    const { slots, setOf, at } = setUp()
    const set = setOf('a')
    slots.slotResult(set, request('a'), 0, true, 100)
    at(600)
    expect(slots.extend([{ key: 'a', slot: 100 }], 2_000)).to.equal(1)
    expect(set.result(600, 2, 1, false).resetMs).to.equal(2_000)
    expect(slots.extend([{ key: 'a', slot: 100 }], 10)).to.equal(1)
    expect(set.result(600, 2, 1, false).resetMs).to.equal(2_000)
    expect(
      slots.extend(
        [
          { key: 'a', slot: 7 },
          { key: 'none', slot: 100 },
        ],
        10,
      ),
    ).to.equal(0)
  })

  it('a key of another kind fails free and extend with a StoreError', () => {
    const { slots, table } = setUp()
    table.entriesOf([{ key: 'log', limit: 2, windowMs: 1_000, cost: 1 }], true)
    for (const run of [() => slots.free([{ key: 'log', slot: 1 }]), () => slots.extend([{ key: 'log', slot: 1 }], 5)]) {
      let error: unknown
      try {
        run()
      } catch (caught) {
        error = caught
      }
      expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE'), String(error)).to.equal(true)
    }
  })
})
