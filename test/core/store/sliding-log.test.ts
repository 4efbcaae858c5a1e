import { readFileSync } from 'node:fs'
import { expect } from 'chai'
import { COMPACT_AT, MAX_REFUND_TAIL, SlidingLog } from '../../../packages/core/src/store/sliding-log.js'
import { luaConstants } from '../../../scripts/lua-constants.mjs'

/** The log's private layout: its entries (time, running total) and how many of them have left the window. */
const layout = (log: SlidingLog) => log as unknown as { log: number[]; head: number }

describe('SlidingLog (the memory store’s log)', () => {
  /** A log with `dead` one-unit entries at 0, 1, … and one live entry, read at a time that leaves the dead ones. */
  const readAfter = (dead: number) => {
    const log = new SlidingLog()
    for (let time = 0; time < dead; time++) log.add(time, 1)
    log.add(1_000, 1)
    expect(log.used(1_000, 500)).to.equal(1)
    return layout(log)
  }

  it('compacts once COMPACT_AT entries have left the window and outnumber the live ones, as the script does', () => {
    expect(COMPACT_AT).to.equal(64)
    expect(readAfter(COMPACT_AT)).to.deep.include({ log: [1_000, 1], head: 0 })
    const below = readAfter(COMPACT_AT - 1)
    expect(below.head).to.equal(COMPACT_AT - 1)
    expect(below.log).to.have.length(2 * COMPACT_AT)
  })

  it('takes COMPACT_AT and MAX_REFUND_TAIL from the script, which applies the same rule in both its paths', () => {
    const lua = readFileSync('lua/sliding-log.lua', 'utf8')
    const constants = luaConstants(lua)
    expect([COMPACT_AT, MAX_REFUND_TAIL]).to.deep.equal([constants.COMPACT_AT, constants.MAX_RELEASE_TAIL])
    expect(lua.match(/head >= COMPACT_AT and head \* 2 > n/g)).to.have.length(2)
  })
})
