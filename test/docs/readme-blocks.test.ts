/**
 * Every code block of README.md, CONTRIBUTING.md, docs/*.md and the packages' READMEs is true as written. Each ```ts,
 * ```typescript and ```js block is
 * type-checked as a module of its own with the repository's TypeScript and tsconfig.base.json's options (strict,
 * noUncheckedIndexedAccess, exactOptionalPropertyTypes, NodeNext; @fleetlimit/* resolve to the workspace sources
 * through the '@fleetlimit/source' condition), all in one program, and every app is run.
 *
 * What a block is (code-blocks.ts decides, from its code and the HTML comments right above its fence):
 * - An app calls `.listen(`. It must be complete (imports included, no ambient name), listen on
 *   process.env.PORT, await nothing at the top level (CommonJS users copy it), and answer GET / (or the path
 *   of a `<!-- docs-test: GET /path -->` comment above it) with 200 up to the limit its RateLimit headers
 *   state, then 429 with Retry-After. It runs under tsx on the workspace sources, with PORT set and REDIS_URL
 *   pointing at a redis-server this test starts (so the keys of an earlier run are never there).
 * - A peer block imports express-rate-limit, rate-limit-redis, @fastify/rate-limit or rate-limiter-flexible
 *   (a "before" in docs/migrating.md): type-checked against the version bench/ pins, in a second program
 *   without fleetlimit's adapters; not type-checked when bench/ does not install it; never run.
 * - A js block is complete: CommonJS when it calls require() and imports nothing, else ESM.
 * - Any other ts block is a fragment. A fragment may use these ambient declarations, and nothing else it does
 *   not define (code-blocks.ts AMBIENT; a fragment that declares one of these names itself keeps its own):
 *
 *     declare const limiter: RateLimiter // import type { RateLimiter } from '@fleetlimit/core'
 *     declare const store: Store // import type { Store } from '@fleetlimit/core'
 *     declare const redis: Redis // import type { Redis } from 'ioredis'
 *     declare const app: Express // import type { Express } from 'express'
 *
 * ```sh, ```json, ```text and plain blocks are not type-checked; sh blocks may name only root package.json
 * scripts and workspace packages. The files are written to test/docs/.tmp/blocks-<pid> (with a tsconfig.json:
 * `pnpm exec tsc -p test/docs/.tmp/blocks-<pid>` reproduces the check), kept when a test fails.
 */
import { readdirSync, readFileSync, rmdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { freePort, type RedisServer, startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { expect } from 'chai'
import {
  type AppRun,
  type CheckResult,
  type CodeBlock,
  checkedBlocks,
  extractBlocks,
  peerInstalled,
  repoRoot,
  requestPath,
  runApp,
  topLevelAwaitLines,
  typeCheck,
  userDocs,
} from './code-blocks.js'

const DOCS = [
  ...userDocs,
  // Each package's own README, on its npm page.
  ...['core', 'express', 'koa', 'fastify'].map((name) => `packages/${name}/README.md`),
]
const HARNESS = 'test/docs/fixtures/harness.md'
// One directory per run: two runs at once (two engineers, one tree) never write each other's files.
const TMP = join(repoRoot, 'test/docs/.tmp', `blocks-${process.pid}`)

const blocks = DOCS.flatMap((doc) => extractBlocks(doc))
const checked = checkedBlocks(blocks)
const apps = checked.filter((b) => b.kind === 'app')
const harnessAll = extractBlocks(HARNESS)
const harness = checkedBlocks(harnessAll)
const title = (b: CodeBlock) => `${b.doc}:${b.fenceLine} (${b.lang} ${b.kind})`
const read = (path: string) => readFileSync(join(repoRoot, path), 'utf8')

describe('docs: the code blocks of README.md and docs/*.md', () => {
  let result: CheckResult
  let failed = false

  before(async function () {
    this.timeout(60_000)
    result = await typeCheck([...checked, ...harness], TMP)
  })
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true
  })
  after(() => {
    if (failed) return
    rmSync(TMP, { recursive: true, force: true })
    rmdirIfEmpty(join(repoRoot, 'test/docs/.tmp'))
  })

  const errorsOf = (block: CodeBlock) =>
    result.files.filter((f) => f.block === block).flatMap((f) => result.errors.get(f.path) ?? [])

  describe('type-check', () => {
    it('the programs have no errors of their own (options, ambient declarations)', () => {
      expect(result.globalErrors).to.deep.equal([])
    })

    for (const block of checked) {
      if (block.kind === 'peer' && !block.peers.every(peerInstalled)) {
        it(`${title(block)} imports peers that bench/ pins (not installed: not type-checked)`, () => {
          const bench = JSON.parse(read('bench/package.json')) as { devDependencies: Record<string, string> }
          for (const peer of block.peers) expect(bench.devDependencies).to.have.property(peer)
        })
        continue
      }
      it(`${title(block)} type-checks`, () => {
        expect(result.files.filter((f) => f.block === block)).to.have.length(1)
        const errors = errorsOf(block)
        expect(errors, `\n${errors.join('\n')}\n`).to.deep.equal([])
      })
    }

    for (const block of apps) {
      it(`${title(block)} is a complete app: it listens on process.env.PORT and awaits nothing at the top level`, () => {
        expect(block.code).to.match(/process\.env\.PORT/)
        expect(topLevelAwaitLines(block), 'lines with a top-level await').to.deep.equal([])
        expect(result.files.find((f) => f.block === block)?.ambient).to.deep.equal([])
      })
    }

    it('the check rejects what it should, at the Markdown line and column', () => {
      expect(harnessAll.map((b) => b.lang)).to.deep.equal(['ts', 'ts', 'ts', 'js', 'js', 'sh'])
      expect(harness.map((b) => b.kind)).to.deep.equal(['fragment', 'fragment', 'app', 'module', 'peer'])
      const [missingName, ownName, app, commonJs, peer] = harness
      const lines = read(HARNESS).split('\n')
      const lineOf = (text: string) => lines.findIndex((line) => line.includes(text)) + 1
      const only = (block: CodeBlock | undefined) => {
        if (!block) throw new Error('a harness block is missing')
        return errorsOf(block).map((e) => e.split('\n')[0])
      }
      // The first line: the ambient import sits in front of it, and the column is the block's own.
      expect(only(missingName)).to.deep.equal([
        `${HARNESS}:${lineOf('missingName')}:13 TS2304 Cannot find name 'missingName'.`,
      ])
      expect(only(ownName)).to.deep.equal([])
      expect(only(app)).to.deep.equal([
        `${HARNESS}:${lineOf('{ store,')}:21 TS18004 No value exists in scope for the shorthand property 'store'. Either declare one or provide an initializer.`,
      ])
      expect(app && topLevelAwaitLines(app)).to.deep.equal([lineOf('await Promise.resolve()')])
      expect(only(commonJs)).to.have.length(1)
      expect(only(commonJs)[0]).to.match(new RegExp(`^${HARNESS}:${lineOf("'one minute'")}:\\d+ TS2322 `))
      if (peer?.peers.every(peerInstalled)) {
        expect(only(peer)).to.have.length(1)
        expect(only(peer)[0]).to.match(new RegExp(`^${HARNESS}:${lineOf("windowMs: '1m'")}:\\d+ TS2322 `))
      }
    })
  })

  describe('run', () => {
    let redis: RedisServer | undefined
    // Started together (tsx's start-up is most of each run), each on a Redis database of its own: two apps on
    // the same prefix and policy name would share a window otherwise.
    const runs = new Map<CodeBlock, Promise<AppRun>>()

    before(async function () {
      this.timeout(60_000)
      redis = await startRedisServer(['--databases', String(apps.length + 1)])
      const { url } = redis
      apps.forEach((block, i) => {
        const file = result.files.find((f) => f.block === block)
        const run = file
          ? freePort().then((port) =>
              runApp(file.path, { PORT: String(port), REDIS_URL: `${url}/${i + 1}` }, { path: requestPath(block) }),
            )
          : Promise.reject(new Error('not written'))
        run.catch(() => {}) // reported by its test
        runs.set(block, run)
      })
      await Promise.allSettled(runs.values())
    })
    after(async () => {
      await redis?.stop()
    })

    for (const block of apps) {
      it(`${title(block)} answers GET ${requestPath(block)} with 200 up to its limit, then 429 with Retry-After`, async () => {
        const run = await runs.get(block)
        if (!run) throw new Error('not run')
        expect(run.limit, `the first response's RateLimit-Policy (${run.policy}) states a limit`).to.be.a('number')
        expect(run.statuses).to.deep.equal([...Array<number>(run.limit ?? 0).fill(200), 429])
        expect(run.retryAfter).to.match(/^[1-9]\d*$/)
      })
    }
  })
})

describe('docs: README.md', () => {
  const readme = read('README.md')
  const headings = readme.split('\n').filter((line) => /^##? /.test(line))
  const section = (heading: string) => {
    const start = readme.split('\n').indexOf(heading) + 1
    const end = readme.split('\n').findIndex((line, i) => i >= start && /^## /.test(line))
    return (b: CodeBlock) => b.doc === 'README.md' && b.fenceLine > start && b.fenceLine <= end
  }

  it('opens with what it is, the install lines and the quick starts, then the table of contents', () => {
    expect(headings.slice(0, 4)).to.deep.equal(['# fleetlimit', '## Install', '## Quick start', '## Contents'])
    const install = blocks.filter(section('## Install'))
    // The install lines, then the way from a clone until the packages are published (readme-commands.test.ts).
    expect(install.map((b) => b.lang)).to.deep.equal(['sh', 'sh'])
    for (const name of ['express', 'koa', 'fastify']) {
      expect(install[0]?.code).to.match(new RegExp(`^npm install @fleetlimit/${name} .*\\bioredis\\b`, 'm'))
    }
    const quickStarts = apps.filter(section('## Quick start'))
    for (const name of ['express', 'koa', 'fastify']) {
      expect(
        quickStarts.some(
          (b) => b.code.includes(`from '@fleetlimit/${name}'`) || b.code.includes(`require('@fleetlimit/${name}')`),
        ),
        name,
      ).to.equal(true)
    }
    // The memory store first: the first three quick starts name no store.
    expect(quickStarts.slice(0, 3).map((b) => /\bstore\b/.test(b.code))).to.deep.equal([false, false, false])
  })

  it('has the two blocks the package test runs, right under their markers in the quick start', () => {
    const marked = (name: string) => blocks.filter((b) => b.markers.includes(`pack-test: ${name}`))
    const quickStart = section('## Quick start')
    const [cjs, ...moreCjs] = marked('express-cjs')
    const [esm, ...moreEsm] = marked('fastify-esm')
    expect([moreCjs, moreEsm]).to.deep.equal([[], []])
    for (const block of [cjs, esm]) {
      if (!block) throw new Error('a pack-test block is missing')
      expect(quickStart(block), `${title(block)} is in the quick start`).to.equal(true)
      expect(block.markers.at(-1), 'the marker is on the line right above the fence').to.match(/^pack-test: /)
      expect(block.kind).to.equal('app')
      expect(block.code).to.include('process.env.PORT ?? 3000')
      expect(block.code).to.match(/\blimit: [1-9]\b/)
      expect(block.code, 'on the memory store').not.to.match(/\bstore\b|redis/i)
      expect(block.code, 'exports nothing').not.to.match(/^\s*export\s|module\.exports|\bexports\./m)
    }
    expect(cjs?.lang).to.equal('js')
    expect(cjs?.code).to.include("const { rateLimit } = require('@fleetlimit/express')")
    expect(cjs?.code).not.to.match(/^\s*import\s/m)
    expect(esm?.lang).to.be.oneOf(['js', 'ts'])
    expect(esm?.code).to.include("import { rateLimit } from '@fleetlimit/fastify'")
    expect(esm?.code).not.to.match(/\brequire\s*\(/)
  })

  it('links docs/migrating.md', () => {
    expect(readme).to.include('](docs/migrating.md)')
  })
})

describe('docs: sh blocks', () => {
  const pkg = JSON.parse(read('package.json')) as { scripts: Record<string, string>; packageManager: string }
  // pnpm's own commands the docs may use; anything else after `pnpm` must be a root script.
  const PNPM_COMMANDS = new Set(['install', 'add', 'exec', 'dlx', 'run', 'pack', '-r', '--filter'])
  const packages = new Set(readdirSync(join(repoRoot, 'packages')))

  it('sh blocks name only root scripts, the pinned pnpm, and packages of the workspace', () => {
    const problems: string[] = []
    for (const block of blocks.filter((b) => b.lang === 'sh')) {
      block.code.split('\n').forEach((line, i) => {
        const where = `${block.doc}:${block.fenceLine + 1 + i}`
        for (const [, word = ''] of line.matchAll(/\bpnpm\s+([^\s;&|]+)/g)) {
          if (!PNPM_COMMANDS.has(word) && !(word in pkg.scripts)) problems.push(`${where}: no script \`${word}\``)
        }
        for (const [pinned] of line.matchAll(/\bpnpm@[\d.]+/g)) {
          if (pinned !== pkg.packageManager)
            problems.push(`${where}: ${pinned}, but package.json has ${pkg.packageManager}`)
        }
        // `conditions=@fleetlimit/source` is the workspace's export condition, not a package.
        for (const [, name = ''] of line.matchAll(/(?<![=\w])@fleetlimit\/([\w-]+)/g)) {
          if (!packages.has(name)) problems.push(`${where}: no package @fleetlimit/${name}`)
        }
      })
    }
    expect(problems).to.deep.equal([])
  })
})

function rmdirIfEmpty(dir: string): void {
  try {
    rmdirSync(dir)
  } catch {
    // Another run's files are there, or it is gone already.
  }
}
