import { readFileSync } from 'node:fs'
import { expect } from 'chai'
import { slidingLogLayout } from '../../../packages/core/src/store/sliding-log-layout.generated.js'
import { luaConstants, structSize } from '../../../scripts/lua-constants.mjs'

// What the generator reads from a script for TypeScript code to share (scripts/lua-constants.mjs).
describe('luaConstants and structSize (scripts/lua-constants.mjs)', () => {
  it('reads numbers, powers and strings, one statement or several names, values on the lines after', () => {
    const source = [
      'local H, K = 85, 4',
      "local FORMAT = '>dI4'",
      'local NARROW, E, ENTRY =',
      "  2 ^ 37, 9, '>I5I4'",
      'local lower = 1',
      '  local INDENTED = 2',
    ].join('\n')
    expect(luaConstants(source)).to.deep.equal({
      H: 85,
      K: 4,
      FORMAT: '>dI4',
      NARROW: 2 ** 37,
      E: 9,
      ENTRY: '>I5I4',
    })
  })

  it('refuses a constant it cannot read rather than guess it', () => {
    expect(() => luaConstants('local A, B = 1')).to.throw('cannot read the constants A, B')
    expect(() => luaConstants('local A = 2 * 3')).to.throw('the constant A is neither a number nor a string: 2 * 3')
  })

  it('sizes a struct format field by field', () => {
    expect(structSize('>dI4I4I4I4I6I6dBI6I4I6I4I6I4I6I4')).to.equal(85)
    expect(structSize('>Hc1ddddd')).to.equal(43)
    expect([structSize('>I5I4'), structSize('>I6I4'), structSize('>bdI4')]).to.deep.equal([9, 10, 13])
  })

  it('the generated layout is lua/sliding-log.lua’s own constants', () => {
    const c = luaConstants(readFileSync('lua/sliding-log.lua', 'utf8'))
    expect(slidingLogLayout).to.deep.equal({
      headerBytes: c.H,
      cachedEntries: c.K,
      entryBytes: c.NARROW_E,
      wideEntryBytes: c.WIDE_E,
      wideAboveWindowUs: c.NARROW,
      compactAt: c.COMPACT_AT,
      maxReleaseTail: c.MAX_RELEASE_TAIL,
    })
    expect(slidingLogLayout).to.deep.include({ headerBytes: 85, entryBytes: 9, wideEntryBytes: 10, compactAt: 64 })
  })
})
