// The text of a Lua script as it is sent to Redis: lua/*.lua keep their comments, Redis gets none of them.

/**
 * The Lua source without its comments (`--` to the end of the line, `--[[ ]]` and `--[==[ ]==]` blocks), its
 * leading indentation and its blank lines. Strings ('…', "…", [[…]]) are copied as they are, so a `--` inside
 * one stays, and so do the lines of a long string.
 */
export function leanLua(source) {
  const [shebang, ...rest] = source.startsWith('#!') ? source.split('\n') : ['', source]
  const body = rest.join('\n')
  let out = ''
  let atLineStart = true
  let i = 0
  const longBracket = (at) => /^\[(=*)\[/.exec(body.slice(at))
  const closeOf = (open, from) => {
    const close = `]${open[1]}]`
    const end = body.indexOf(close, from)
    if (end < 0) throw new Error(`unclosed long bracket ${open[0]}`)
    return end + close.length
  }
  while (i < body.length) {
    const c = body[i]
    if (atLineStart && (c === ' ' || c === '\t')) {
      i++
      continue
    }
    if (c === '-' && body[i + 1] === '-') {
      const open = longBracket(i + 2)
      if (open) i = closeOf(open, i + 2 + open[0].length)
      else while (i < body.length && body[i] !== '\n') i++
      continue
    }
    if (c === '\n') {
      out = out.replace(/[ \t]+$/, '')
      if (!atLineStart) out += '\n'
      atLineStart = true
      i++
      continue
    }
    atLineStart = false
    if (c === "'" || c === '"') {
      let j = i + 1
      while (j < body.length && body[j] !== c) {
        if (body[j] === '\n') throw new Error('unfinished string')
        j += body[j] === '\\' ? 2 : 1
      }
      out += body.slice(i, j + 1)
      i = j + 1
      continue
    }
    const open = c === '[' ? longBracket(i) : null
    if (open) {
      const end = closeOf(open, i + open[0].length)
      out += body.slice(i, end)
      i = end
      continue
    }
    out += c
    i++
  }
  out = out.replace(/[ \t]+$/, '')
  if (out !== '' && !out.endsWith('\n')) out += '\n'
  return source.startsWith('#!') ? `${shebang}\n${out}` : out
}
