import { readFileSync } from 'node:fs'
import { expect } from 'chai'
import { slidingLogLayout as generatedLayout } from '../../../packages/core/src/store/sliding-log-layout.generated.js'
import { luaConstants, slidingLogLayout, structSize } from '../../../scripts/lua-constants.mjs'

// What the generator reads from a script for TypeScript code to share (scripts/lua-constants.mjs).
describe('luaConstants, structSize and slidingLogLayout (scripts/lua-constants.mjs)', () => {
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
    const lua = readFileSync('lua/sliding-log.lua', 'utf8')
    const c = luaConstants(lua)
    expect(generatedLayout).to.deep.equal(slidingLogLayout(lua))
    expect(generatedLayout).to.deep.equal({
      headerBytes: c.H,
      cachedEntries: c.K,
      entryBytes: c.NARROW_E,
      wideEntryBytes: c.WIDE_E,
      wideAboveWindowUs: c.NARROW,
      compactAt: c.COMPACT_AT,
      maxReleaseTail: c.MAX_RELEASE_TAIL,
    })
    expect(generatedLayout).to.deep.include({ headerBytes: 85, entryBytes: 9, wideEntryBytes: 10, compactAt: 64 })
  })

  it('refuses a layout whose constants disagree with the formats they size, naming the constant', () => {
    const lua = readFileSync('lua/sliding-log.lua', 'utf8')
    const changed = (from: string, to: string) => {
      expect(lua, from).to.include(from)
      return () => slidingLogLayout(lua.replace(from, to))
    }
    expect(changed('local H, K = 85, 4', 'local H, K = 84, 4')).to.throw('H (84) is not the size of HEADER (85)')
    expect(changed("local HEADER_AT = '-85'", "local HEADER_AT = '-84'")).to.throw('HEADER_AT (-84)')
    expect(changed('local H, K = 85, 4', 'local H, K = 85, 3')).to.throw('does not end with K (3) cached entries')
    expect(changed('2 ^ 37, 9,', '2 ^ 37, 10,')).to.throw('NARROW_E (10) is not the size of NARROW_ENTRY')
    expect(changed("'>I5I4dI4", "'>I5I4I4dI4")).to.throw('NARROW_ENTRY_HEADER is not NARROW_ENTRY then HEADER')
    expect(changed('local COMPACT_AT = 64', "local COMPACT_AT = '64'")).to.throw('compactAt is not an integer')
  })
})
