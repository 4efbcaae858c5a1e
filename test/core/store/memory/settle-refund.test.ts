import { isFleetlimitError } from '@fleetlimit/core'
import { expect } from 'chai'
import { createKeyTable, type Entry } from '../../../../packages/core/src/store/memory/key-table.js'
import { createSettleRefund } from '../../../../packages/core/src/store/memory/settle-refund.js'
import type { SlidingLog } from '../../../../packages/core/src/store/sliding-log.js'

const WINDOW = 1_000

function setUp() {
  let now = 1_000
  const table = createKeyTable(10)
  const ops = createSettleRefund(table, () => now)
  /** Records `units` at `time` in key's sliding log. */
  const record = (key: string, time: number, units: number) =>
    ((table.entriesOf([{ key, limit: 100, windowMs: WINDOW, cost: units }], true)[0] as Entry).log as SlidingLog).add(
      time,
      units,
    )
  const used = (key: string) => table.entries.get(key)?.log?.used(now, WINDOW) ?? 0
  return { ops, table, record, used, at: (ms: number) => (now = ms) }
}

describe('memory store settle and refund (store/memory/settle-refund.ts)', () => {
  it('settles a delta at the admission time in each window that holds it, once per id', () => {
    const { ops, record, used } = setUp()
    record('a', 1_000, 5)
    record('b', 1_000, 5)
    const request = (key: string, delta: number) => ({ key, windowMs: WINDOW, recorded: 1_000, delta })
    expect(ops.settle([request('a', -3), request('b', 2)], 'id-1')).to.deep.equal({ outcome: 'settled', used: [2, 7] })
    expect(used('a')).to.equal(2)
    expect(ops.settle([request('a', -3), request('b', 2)], 'id-1')).to.deep.equal({
      outcome: 'already-settled',
      used: [2, 7],
    })
    // A delta takes at most the units the entry holds.
    expect(ops.settle([request('a', -9)], 'id-2')).to.deep.equal({ outcome: 'settled', used: [0] })
  })

  it('a settle finds nothing to change once the admission has left every window', () => {
    const { ops, record, at } = setUp()
    record('a', 1_000, 5)
    at(2_000)
    expect(ops.settle([{ key: 'a', windowMs: WINDOW, recorded: 1_000, delta: 1 }], 'id')).to.deep.equal({
      outcome: 'expired',
      used: [0],
    })
  })

  it('refunds the units of an admission once, plus what its settle moved', () => {
    const { ops, record, used } = setUp()
    record('a', 1_000, 5)
    ops.settle([{ key: 'a', windowMs: WINDOW, recorded: 1_000, delta: 2 }], 'id')
    expect(used('a')).to.equal(7)
    expect(ops.refund([{ key: 'a', windowMs: WINDOW, recorded: 1_000 }], 5, 'id')).to.deep.equal({
      units: 7,
      outcome: 'refunded',
    })
    expect(used('a')).to.equal(0)
    expect(ops.refund([{ key: 'a', windowMs: WINDOW, recorded: 1_000 }], 5, 'id')).to.deep.equal({
      units: 0,
      outcome: 'already-refunded',
    })
    // A settle after the refund is told so.
    expect(ops.settle([{ key: 'a', windowMs: WINDOW, recorded: 1_000, delta: 1 }], 'id')).to.deep.equal({
      outcome: 'refunded',
      used: [0],
    })
  })

  it('a refund names per-window units, and is expired once no window held any', () => {
    const { ops, record, used, at } = setUp()
    record('a', 1_000, 5)
    record('b', 1_000, 5)
    const refund = ops.refund(
      [
        { key: 'a', windowMs: WINDOW, recorded: 1_000, units: 1 },
        { key: 'b', windowMs: WINDOW, recorded: 1_000 },
      ],
      4,
      'id',
    )
    expect(refund).to.deep.equal({ units: 4, outcome: 'refunded' })
    expect([used('a'), used('b')]).to.deep.equal([4, 1])
    at(2_000)
    expect(ops.refund([{ key: 'a', windowMs: WINDOW, recorded: 1_000 }], 1, 'late')).to.deep.equal({
      units: 0,
      outcome: 'expired',
    })
  })

  it('a marker answers until its admission ends; dropEnded forgets it then', () => {
    const { ops, record, at } = setUp()
    record('a', 1_000, 5)
    ops.refund([{ key: 'a', windowMs: WINDOW, recorded: 1_000 }], 2, 'id')
    ops.dropEnded(1_999)
    expect(ops.refund([{ key: 'a', windowMs: WINDOW, recorded: 1_000 }], 2, 'id').outcome).to.equal('already-refunded')
    ops.dropEnded(2_000)
    record('a', 1_000, 2)
    expect(ops.refund([{ key: 'a', windowMs: WINDOW, recorded: 1_000 }], 2, 'id').outcome).to.equal('refunded')
    at(2_000)
    expect(ops.refund([{ key: 'a', windowMs: WINDOW, recorded: 1_000 }], 2, 'id').outcome).to.equal('expired')
  })

  it('a key of another kind fails a settle with a StoreError', () => {
    const { ops, table } = setUp()
    table.entriesOf([{ key: 's', limit: 1, windowMs: WINDOW, cost: 1, slots: true }], true)
    let error: unknown
    try {
      ops.settle([{ key: 's', windowMs: WINDOW, recorded: 1_000, delta: 1 }], 'id')
    } catch (caught) {
      error = caught
    }
    expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE'), String(error)).to.equal(true)
  })
})
