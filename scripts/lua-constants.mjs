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
