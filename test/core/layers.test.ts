import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'

// The folders of core import one way: common <- store <- limiter <- http, outbound, cli. A folder may import its
// own files and those of a lower layer; the top three do not import each other. Files at the root (index.ts,
// http.ts, otel.ts, store.ts, cli.ts) are entry points and may import any folder.
const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../packages/core/src')
const LAYER: Record<string, number> = { common: 0, store: 1, limiter: 2, http: 3, outbound: 3, cli: 3 }

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

/** Every relative module a file names in an import, `import type`, dynamic import or `export … from`, either quote. */
function importsOf(file: string): { line: number; target: string }[] {
  const text = readFileSync(file, 'utf8')
  const found: { line: number; target: string }[] = []
  for (const match of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)(['"])(\.{1,2}\/[^'"]+)\1/g)) {
    const line = text.slice(0, match.index).split('\n').length
    found.push({ line, target: match[2] as string })
  }
  return found
}

/** The source file an import names: its `.js` ending stands for the `.ts` file beside it. */
const fileOf = (from: string, target: string) => resolve(dirname(from), target).replace(/\.js$/, '.ts')

/** Each import circle among `files`, as the chain of files that closes it (one chain per circle found). */
function circlesOf(files: string[]): string[][] {
  const known = new Set(files)
  const state = new Map<string, 'open' | 'done'>()
  const path: string[] = []
  const circles: string[][] = []
  const visit = (file: string) => {
    state.set(file, 'open')
    path.push(file)
    for (const { target } of importsOf(file)) {
      const next = fileOf(file, target)
      if (!known.has(next)) continue
      if (state.get(next) === 'open') circles.push([...path.slice(path.indexOf(next)), next])
      else if (!state.has(next)) visit(next)
    }
    path.pop()
    state.set(file, 'done')
  }
  for (const file of files) if (!state.has(file)) visit(file)
  return circles
}

function folderOf(file: string): string {
  const rel = relative(SRC, file)
  return rel.includes('/') ? (rel.split('/')[0] as string) : ''
}

describe('core source folders import one way (common <- store <- limiter <- http, outbound, cli)', () => {
  const files = sources(SRC)

  it('knows every folder under src', () => {
    const folders = new Set(files.map(folderOf).filter((f) => f !== ''))
    expect([...folders].sort()).to.deep.equal(Object.keys(LAYER).sort())
  })

  it('finds imports to check (the scan reads the sources)', () => {
    const count = files.reduce((n, file) => n + importsOf(file).length, 0)
    expect(count).to.be.greaterThan(100)
  })

  it('has no import from a folder to a higher or sibling layer', () => {
    const wrong: string[] = []
    for (const file of files) {
      const from = folderOf(file)
      if (from === '') continue
      for (const { line, target } of importsOf(file)) {
        const to = folderOf(resolve(dirname(file), target))
        if (to === from) continue
        if (to === '' || (LAYER[to] as number) >= (LAYER[from] as number)) {
          wrong.push(`${relative(SRC, file)}:${line} imports ${target}`)
        }
      }
    }
    expect(wrong).to.deep.equal([])
  })

  it('reads type imports, double quotes and imports spread over lines', () => {
    const sample = join(SRC, 'limiter/limiter.ts')
    const targets = importsOf(sample).map((each) => each.target)
    expect(targets.length).to.be.greaterThan(5)
    expect(new Set(targets).size).to.equal(targets.length)
  })
})

describe('no source file of a package takes part in an import circle, within a folder or across', () => {
  const PACKAGES = resolve(SRC, '../..')
  const files = readdirSync(PACKAGES).flatMap((name) => {
    const src = join(PACKAGES, name, 'src')
    return existsSync(src) ? sources(src) : []
  })

  it('reads every package', () => {
    expect(new Set(files.map((file) => relative(PACKAGES, file).split('/')[0])).size).to.equal(4)
  })

  it('finds a circle where there is one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fleetlimit-circle-'))
    writeFileSync(join(dir, 'a.ts'), 'import type { B } from "./b.js"\nexport type A = B\n')
    writeFileSync(join(dir, 'b.ts'), "export type B = string\nexport type {\n  A,\n} from './a.js'\n")
    writeFileSync(join(dir, 'c.ts'), "import { b } from './b.js'\n")
    const circles = circlesOf(sources(dir)).map((chain) => chain.map((file) => relative(dir, file)))
    rmSync(dir, { recursive: true })
    expect(circles).to.deep.equal([['a.ts', 'b.ts', 'a.ts']])
  })

  it('has none', () => {
    const circles = circlesOf(files).map((chain) => chain.map((file) => relative(PACKAGES, file)).join(' -> '))
    expect(circles).to.deep.equal([])
  })
})
