import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { expect } from 'chai'

// Tests mirror the source: each module of a package has its own test file one obvious path away, so whoever
// changes a room knows which test is its own. Core's `src/<path>.ts` is tested by `test/core/<path>.test.ts`; an
// adapter's `src/<name>.ts` by `test/adapters/<adapter>-<name>.test.ts`, beside the suites shared by the three
// frameworks. Generated files are tested through their generator and the Lua tests. Deliberate exceptions are the
// bullets of CONTRIBUTING.md's "Tests mirror the source" section.
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const HEADING = '### Tests mirror the source'

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.generated.ts') ? [path] : []
  })
}

/** Every source module of every package, as a path from the repository's root (`packages/core/src/keys.ts`). */
function modules(): string[] {
  return readdirSync(join(ROOT, 'packages'))
    .flatMap((name) => sources(join(ROOT, 'packages', name, 'src')))
    .map((file) => relative(ROOT, file))
    .sort()
}

/** The test file that mirrors `module` (a path from the root). */
function mirrorOf(module: string): string {
  const [, pkg, , ...rest] = module.split('/')
  const path = rest.join('/').replace(/\.ts$/, '')
  return pkg === 'core' ? `test/core/${path}.test.ts` : `test/adapters/${pkg}-${path.replaceAll('/', '-')}.test.ts`
}

/** The exceptions the section lists: each bullet is `` - `path`: reason ``. A bullet of another shape is an error. */
function exceptionsIn(markdown: string): Map<string, string> {
  const lines = markdown.split('\n')
  const start = lines.indexOf(HEADING)
  if (start === -1) throw new Error(`no "${HEADING}" section`)
  const found = new Map<string, string>()
  for (const line of lines.slice(start + 1)) {
    if (line.startsWith('#')) break
    if (!line.startsWith('- ')) continue
    const bullet = /^- `([^`]+)`: (\S.*)$/.exec(line)
    if (!bullet) throw new Error(`an exception bullet without a \`path\`: reason shape: ${line}`)
    found.set(bullet[1] as string, bullet[2] as string)
  }
  return found
}

/**
 * What breaks the rule: modules with neither a mirrored test nor an exception, and stale exceptions (a module
 * that now has its test, or no longer exists).
 */
function mirrorGaps(
  all: readonly string[],
  exceptions: ReadonlyMap<string, string>,
  hasTest: (path: string) => boolean,
): { untested: string[]; stale: string[] } {
  const known = new Set(all)
  const untested = all.filter((module) => !hasTest(mirrorOf(module)) && !exceptions.has(module))
  const stale = [...exceptions.keys()].flatMap((module) => {
    if (!known.has(module)) return [`${module} (no such module)`]
    return hasTest(mirrorOf(module)) ? [`${module} (has ${mirrorOf(module)})`] : []
  })
  return { untested, stale }
}

describe('tests mirror the source, file by file (exceptions listed in CONTRIBUTING.md)', () => {
  const all = modules()
  // Read in each test, so a broken section fails a test rather than the whole run.
  const exceptions = () => exceptionsIn(readFileSync(join(ROOT, 'CONTRIBUTING.md'), 'utf8'))
  const hasTest = (path: string) => existsSync(join(ROOT, path))

  it('reads every package, generated files aside', () => {
    expect(new Set(all.map((module) => module.split('/')[1]))).to.deep.equal(
      new Set(['core', 'express', 'fastify', 'koa']),
    )
    expect(all.filter((module) => module.endsWith('.generated.ts'))).to.deep.equal([])
  })

  it('maps a module to its mirror: core by path, an adapter by its name and the module’s', () => {
    expect(mirrorOf('packages/core/src/store/memory/holds.ts')).to.equal('test/core/store/memory/holds.test.ts')
    expect(mirrorOf('packages/core/src/otel.ts')).to.equal('test/core/otel.test.ts')
    expect(mirrorOf('packages/express/src/route-pattern.ts')).to.equal('test/adapters/express-route-pattern.test.ts')
  })

  it('fails on a module without a test or an exception, and on a stale or malformed exception (fixture)', () => {
    const fixture = [
      'packages/core/src/a.ts',
      'packages/core/src/b.ts',
      'packages/core/src/c.ts',
      'packages/core/src/d.ts',
      'packages/koa/src/e.ts',
    ]
    const tested = new Set(['test/core/a.test.ts', 'test/core/d.test.ts', 'test/adapters/koa-e.test.ts'])
    const markdown = [
      '# Contributing',
      HEADING,
      '',
      '- `packages/core/src/c.ts`: only types',
      '- `packages/core/src/d.ts`: wiring',
      '- `packages/core/src/gone.ts`: removed since',
      '',
      '## Next',
      '- `packages/core/src/b.ts`: outside the section, not an exception',
    ].join('\n')
    const listed = exceptionsIn(markdown)
    expect([...listed]).to.deep.equal([
      ['packages/core/src/c.ts', 'only types'],
      ['packages/core/src/d.ts', 'wiring'],
      ['packages/core/src/gone.ts', 'removed since'],
    ])
    expect(mirrorGaps(fixture, listed, (path) => tested.has(path))).to.deep.equal({
      untested: ['packages/core/src/b.ts'],
      stale: ['packages/core/src/d.ts (has test/core/d.test.ts)', 'packages/core/src/gone.ts (no such module)'],
    })
    expect(() => exceptionsIn(`${HEADING}\n- packages/core/src/c.ts only types\n`)).to.throw(
      'an exception bullet without a `path`: reason shape: - packages/core/src/c.ts only types',
    )
    expect(() => exceptionsIn('# Contributing\n')).to.throw(`no "${HEADING}" section`)
  })

  it('has a mirrored test for every module not listed as an exception', () => {
    expect(mirrorGaps(all, exceptions(), hasTest).untested).to.deep.equal([])
  })

  it('lists no stale exception: each names a module that exists and still has no test', () => {
    expect(mirrorGaps(all, exceptions(), hasTest).stale).to.deep.equal([])
  })
})
