import { expect } from 'chai'
import { createKeyTable } from '../../../../packages/core/src/store/memory/key-table.js'
import { createSweep, SWEEP_VISITS_PER_CALL } from '../../../../packages/core/src/store/memory/sweep.js'

/** A table of `live` keys with a unit at 0 and `idle` keys with nothing live, in a 1 000 ms window. */
function tableOf(idle: number, live = 0) {
  const table = createKeyTable(1_000_000)
  const request = (key: string) => ({ key, limit: 5, windowMs: 1_000, cost: 1 })
  for (let i = 0; i < idle; i++) table.entriesOf([request(`idle-${i}`)], true)
  for (let i = 0; i < live; i++) table.entriesOf([request(`live-${i}`)], true)[0]?.log?.add(500, 1)
  return table
}

describe('memory store sweep (store/memory/sweep.ts)', () => {
  it('starts a sweep once the interval has passed, calling onStart with the time', () => {
    const table = tableOf(3, 2)
    const starts: number[] = []
    const sweep = createSweep(table, { maxKeys: 100, sweepIntervalMs: 1_000, start: 0, onStart: (n) => starts.push(n) })
    sweep.housekeep(999, 1)
    expect(starts).to.deep.equal([])
    expect(table.entries.size).to.equal(5)
    sweep.housekeep(1_000, 1)
    expect(starts).to.deep.equal([1_000])
    expect([...table.entries.keys()]).to.deep.equal(['live-0', 'live-1'])
    // The next sweep waits a whole interval from this one.
    sweep.housekeep(1_999, 1)
    expect(starts).to.deep.equal([1_000])
  })

  it('a store near its cap sweeps without waiting for the interval', () => {
    const table = tableOf(4)
    const starts: number[] = []
    const sweep = createSweep(table, { maxKeys: 5, sweepIntervalMs: 60_000, start: 0, onStart: (n) => starts.push(n) })
    sweep.housekeep(10, 1)
    expect(starts).to.deep.equal([])
    sweep.housekeep(20, 2)
    expect(starts).to.deep.equal([20])
    expect(table.entries.size).to.equal(0)
  })

  it('visits SWEEP_VISITS_PER_CALL keys per call, resuming where it stopped', () => {
    const table = tableOf(SWEEP_VISITS_PER_CALL * 2 + 5)
    const sweep = createSweep(table, { maxKeys: 1e9, sweepIntervalMs: 100, start: 0, onStart: () => {} })
    sweep.housekeep(100, 0)
    expect(table.entries.size).to.equal(SWEEP_VISITS_PER_CALL + 5)
    sweep.housekeep(101, 0)
    expect(table.entries.size).to.equal(5)
    sweep.housekeep(102, 0)
    expect(table.entries.size).to.equal(0)
  })

  it('sweepAll drops every idle key at once, returns the count, and restarts the interval', () => {
    const table = tableOf(SWEEP_VISITS_PER_CALL + 1, 2)
    const starts: number[] = []
    const sweep = createSweep(table, { maxKeys: 1e9, sweepIntervalMs: 100, start: 0, onStart: (n) => starts.push(n) })
    expect(sweep.sweepAll(50)).to.equal(SWEEP_VISITS_PER_CALL + 1)
    expect(table.entries.size).to.equal(2)
    sweep.housekeep(149, 0)
    expect(starts).to.deep.equal([])
    sweep.housekeep(150, 0)
    expect(starts).to.deep.equal([150])
    // At 1 500 the live keys' unit (at 500) has left its window.
    expect(sweep.sweepAll(1_500)).to.equal(2)
  })
})
