import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'
import ts from 'typescript'

// Rooms a reader can know: no source file of a package over 400 lines, no function over 200 (generated files
// aside). A function is any declaration, expression, arrow or method, nested ones included, counted from its first
// line to its last.
const PACKAGES = resolve(dirname(fileURLToPath(import.meta.url)), '../../packages')
const MAX_FILE_LINES = 400
const MAX_FUNCTION_LINES = 200

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.generated.ts') ? [path] : []
  })
}

/** Each function of `text` longer than `max` lines, as `name (lines)`. */
function longFunctions(name: string, text: string, max: number): string[] {
  const file = ts.createSourceFile(name, text, ts.ScriptTarget.Latest, true)
  const found: string[] = []
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const first = file.getLineAndCharacterOfPosition(node.getStart(file)).line
      const last = file.getLineAndCharacterOfPosition(node.getEnd()).line
      const lines = last - first + 1
      if (lines > max) {
        const named = node.name !== undefined && ts.isIdentifier(node.name) ? node.name.text : '(anonymous)'
        found.push(`${named} (${lines})`)
      }
    }
    ts.forEachChild(node, visit)
  }
  visit(file)
  return found
}

describe('rooms: the packages’ source files and functions stay a size a reader can hold', () => {
  const files = readdirSync(PACKAGES).flatMap((name) => sources(join(PACKAGES, name, 'src')))

  it('reads every package', () => {
    expect(new Set(files.map((file) => relative(PACKAGES, file).split('/')[0])).size).to.equal(4)
  })

  it(`finds a function over ${MAX_FUNCTION_LINES} lines where there is one`, () => {
    const body = Array.from({ length: 210 }, (_, i) => `  const a${i} = ${i}`).join('\n')
    const text = `export function outer() {\n  return () => {\n${body}\n  }\n}\nconst short = () => 1\n`
    expect(longFunctions('fixture.ts', text, MAX_FUNCTION_LINES)).to.deep.equal(['outer (214)', '(anonymous) (212)'])
  })

  it(`has no file over ${MAX_FILE_LINES} lines`, () => {
    const long = files
      .map((file) => ({ file: relative(PACKAGES, file), lines: readFileSync(file, 'utf8').split('\n').length }))
      .filter(({ lines }) => lines > MAX_FILE_LINES)
      .map(({ file, lines }) => `${file} (${lines})`)
    expect(long).to.deep.equal([])
  })

  it(`has no function over ${MAX_FUNCTION_LINES} lines`, () => {
    const long = files.flatMap((file) =>
      longFunctions(file, readFileSync(file, 'utf8'), MAX_FUNCTION_LINES).map(
        (f) => `${relative(PACKAGES, file)}: ${f}`,
      ),
    )
    expect(long).to.deep.equal([])
  })
})
