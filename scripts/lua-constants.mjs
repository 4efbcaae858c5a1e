// The constants a Lua script declares (`local NAME, … = value, …` at the start of a line, values possibly on the
// indented lines after it), so that TypeScript code can use the script's own values instead of copies.

/** Each `local UPPER_CASE = …` constant of `source`: numbers (`64`, `2 ^ 37`) and '…' strings. */
export function luaConstants(source) {
  const constants = {}
  const statement = /^local ([A-Z][A-Z0-9_]*(?:, [A-Z][A-Z0-9_]*)*) =((?:.*)(?:\n[ \t]+.*)*)/gm
  for (const [, names, values] of source.matchAll(statement)) {
    const parts = values.match(/'[^']*'|[^,]+/g)?.map((part) => part.trim()) ?? []
    const keys = names.split(', ')
    if (parts.length !== keys.length) throw new Error(`cannot read the constants ${names}`)
    for (const [i, name] of keys.entries()) constants[name] = readValue(parts[i], name)
  }
  return constants
}

function readValue(text, name) {
  if (/^\d+$/.test(text)) return Number(text)
  const power = /^(\d+) \^ (\d+)$/.exec(text)
  if (power) return Number(power[1]) ** Number(power[2])
  if (/^'[^']*'$/.test(text)) return text.slice(1, -1)
  throw new Error(`the constant ${name} is neither a number nor a string: ${text}`)
}

const SIZES = { b: 1, B: 1, d: 8, H: 2, c1: 1, I4: 4, I5: 5, I6: 6 }

/** The bytes of a struct.pack format of fixed-size fields ('>dI4B'). */
export function structSize(format) {
  let size = 0
  for (const [field] of format.replace(/^>/, '').matchAll(/I\d|c1|[bBdH]/g)) size += SIZES[field]
  return size
}

/** lua/sliding-log.lua's layout constants, after checking that they agree with its struct formats. */
export function slidingLogLayout(source) {
  const c = luaConstants(source)
  const expect = (holds, what) => {
    if (!holds) throw new Error(`lua/sliding-log.lua: ${what}`)
  }
  expect(structSize(c.HEADER) === c.H, `H (${c.H}) is not the size of HEADER (${structSize(c.HEADER)})`)
  expect(c.HEADER_AT === `-${c.H}`, `HEADER_AT (${c.HEADER_AT}) is not the last H bytes`)
  expect(c.HEADER === c.HEADER_FIRST + c.HEADER_REST.slice(1), 'HEADER is not HEADER_FIRST then HEADER_REST')
  const cached = (/(?:I6I4)+$/.exec(c.HEADER)?.[0].length ?? 0) / 'I6I4'.length
  expect(cached === c.K, `HEADER does not end with K (${c.K}) cached entries, but ${cached}`)
  expect(structSize(c.CALL_WINDOW) === c.CALL_WINDOW_SIZE, 'CALL_WINDOW_SIZE is not the size of CALL_WINDOW')
  for (const form of ['NARROW', 'WIDE']) {
    const [e, entry, entryHeader] = [c[`${form}_E`], c[`${form}_ENTRY`], c[`${form}_ENTRY_HEADER`]]
    expect(structSize(entry) === e, `${form}_E (${e}) is not the size of ${form}_ENTRY`)
    expect(entryHeader === entry + c.HEADER.slice(1), `${form}_ENTRY_HEADER is not ${form}_ENTRY then HEADER`)
  }
  const layout = {
    headerBytes: c.H,
    cachedEntries: c.K,
    entryBytes: c.NARROW_E,
    wideEntryBytes: c.WIDE_E,
    wideAboveWindowUs: c.NARROW,
    compactAt: c.COMPACT_AT,
    maxReleaseTail: c.MAX_RELEASE_TAIL,
  }
  for (const [name, value] of Object.entries(layout)) expect(Number.isInteger(value), `${name} is not an integer`)
  return layout
}
