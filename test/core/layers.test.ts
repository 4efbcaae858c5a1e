import { readdirSync, readFileSync } from 'node:fs'
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

/** Every relative module a file names in an import or export ... from, with the line it is on. */
function importsOf(file: string): { line: number; target: string }[] {
  const found: { line: number; target: string }[] = []
  readFileSync(file, 'utf8')
    .split('\n')
    .forEach((text, index) => {
      for (const match of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)'(\.{1,2}\/[^']+)'/g)) {
        found.push({ line: index + 1, target: match[1] as string })
      }
    })
  return found
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
})
