import { readFileSync } from 'node:fs'
import { expect } from 'chai'
import { COMPACT_AT, SlidingLog } from '../../../packages/core/src/store/sliding-log.js'

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

  it('the script compacts at the same count', () => {
    const lua = readFileSync('lua/sliding-log.lua', 'utf8')
    expect(lua).to.include(`local COMPACT_AT = ${COMPACT_AT}\n`)
    expect(lua.match(/head >= COMPACT_AT and head \* 2 > n/g)).to.have.length(2)
  })
})
