import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'chai'
import { packageNames, packPackages, root, run } from './pack.js'

/**
 * A fenced code block of a README, found by the HTML comment on the line before it
 * (`<!-- pack-test: NAME -->`). Throws when it is missing: a test without its snippet must fail, not pass.
 */
function markedSnippet(readme: string, name: string): string {
  const marker = `<!-- pack-test: ${name} -->`
  const at = readme.indexOf(`${marker}\n`)
  const block = at === -1 ? null : /^```[\w-]*\n([\s\S]*?)\n```/.exec(readme.slice(at + marker.length + 1))
  if (!block?.[1]) {
    throw new Error(`README.md has no fenced code block right after a line "${marker}": the pack test runs it`)
  }
  return block[1]
}

/** The first ```js block of a package's README: its example. */
function firstJsBlock(readme: string, name: string): string {
  const block = /^```js\n([\s\S]*?)\n```/m.exec(readme)
  if (!block?.[1]) throw new Error(`packages/${name}/README.md has no \`\`\`js example`)
  return block[1]
}

// Loaded before an app (with --require, for CommonJS and ESM alike): reports the address of the first server
// that listens, so the app can listen on PORT=0 and the test learns the port without polling.
const reportListen = `
const net = require('node:net')
const listen = net.Server.prototype.listen
let reported = false
net.Server.prototype.listen = function (...args) {
  this.once('listening', () => {
    if (reported) return
    reported = true
    process.send(this.address())
  })
  return listen.apply(this, args)
}
`

interface Exchange {
  readonly status: number
  readonly body: string
  readonly headers: Headers
}

/** Runs an app on PORT=0, sends GET / until one past the limit its first answer declares, and stops it. */
async function exerciseApp(cwd: string, file: string): Promise<Exchange[]> {
  const child = spawn(process.execPath, ['--require', './report-listen.cjs', file], {
    cwd,
    env: { ...process.env, PORT: '0', NODE_OPTIONS: '' },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  })
  let stderr = ''
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk
  })
  try {
    const address = await listening(child, () => stderr)
    const host =
      address.family === 'IPv6' ? (address.address === '::' ? '[::1]' : `[${address.address}]`) : address.address
    const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${address.port}/`
    const get = async (): Promise<Exchange> => {
      const response = await fetch(url)
      return { status: response.status, body: await response.text(), headers: response.headers }
    }
    const first = await get()
    const quota = /;q=(\d+)/.exec(first.headers.get('ratelimit-policy') ?? '')
    if (!quota) return [first]
    const exchanges = [first]
    for (let i = 0; i < Number(quota[1]); i++) exchanges.push(await get())
    return exchanges
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve))
    if (child.exitCode === null && child.signalCode === null) child.kill()
    await exited
  }
}

function listening(
  child: ChildProcess,
  stderr: () => string,
): Promise<{ address: string; family: string; port: number }> {
  return new Promise((resolve, reject) => {
    child.once('message', (address) => resolve(address as { address: string; family: string; port: number }))
    child.once('exit', (code) => reject(new Error(`the app exited (${code}) before listening:\n${stderr()}`)))
  })
}

/** One 200 (with this body, if given), then 200s to the declared limit, then a 429 with Retry-After. */
function expectLimited(exchanges: Exchange[], body?: string): void {
  const [first] = exchanges
  expect(first?.status).to.equal(200)
  if (body !== undefined) expect(first?.body).to.equal(body)
  expect(first?.headers.get('ratelimit-policy'), 'RateLimit-Policy').to.match(/;q=\d+;w=\d+/)
  expect(first?.headers.get('ratelimit'), 'RateLimit').to.match(/;r=\d+;t=\d+/)
  const statuses = exchanges.map((e) => e.status)
  expect(
    statuses.slice(0, -1).every((status) => status === 200),
    String(statuses),
  ).to.equal(true)
  const denied = exchanges.at(-1)
  expect(denied?.status, String(statuses)).to.equal(429)
  expect(Number(denied?.headers.get('retry-after'))).to.be.within(1, 60)
}

const workspaceVersion = async (name: string) =>
  JSON.parse(await readFile(join(root, 'node_modules', name, 'package.json'), 'utf8')).version as string

/**
 * The tarballs installed as a user installs them. Run from test/package.test.ts, in its process: both build the
 * packages, which two test processes must not do at once.
 */
export function describeInstalls(): void {
  describe('the tarballs installed with npm into a new project outside the repository', function () {
    // npm install from the registry: 20 to 40 s on a cold cache.
    this.timeout(240_000)
    let project: string

    before(async () => {
      const { tarballs } = await packPackages()
      project = await mkdtemp(join(tmpdir(), 'fleetlimit-install-'))
      await writeFile(join(project, 'package.json'), '{ "name": "consumer", "version": "1.0.0", "private": true }\n')
      await writeFile(join(project, 'report-listen.cjs'), reportListen)
      // The workspace's versions of the frameworks, so a warm npm cache serves them; no ioredis: the memory store.
      const peers = await Promise.all(
        ['express', 'fastify', 'koa', '@types/node'].map(async (name) => `${name}@${await workspaceVersion(name)}`),
      )
      await run(
        'npm',
        [
          'install',
          '--prefer-offline',
          '--no-audit',
          '--no-fund',
          ...packageNames.map((name) => tarballs[name]),
          ...peers,
        ],
        { cwd: project },
      )
    })
    after(() => (project && !process.env.KEEP_PACK ? rm(project, { recursive: true, force: true }) : undefined))

    it('runs the README’s Express quick start as CommonJS: 200, then 429 past the limit', async () => {
      const snippet = markedSnippet(await readFile(join(root, 'README.md'), 'utf8'), 'express-cjs')
      await writeFile(join(project, 'express-app.cjs'), snippet)
      expectLimited(await exerciseApp(project, 'express-app.cjs'))
    })

    it('runs the README’s Fastify quick start as ESM: 200, then 429 past the limit', async () => {
      const snippet = markedSnippet(await readFile(join(root, 'README.md'), 'utf8'), 'fastify-esm')
      await writeFile(join(project, 'fastify-app.mjs'), snippet)
      expectLimited(await exerciseApp(project, 'fastify-app.mjs'))
    })

    it('runs each adapter’s README example as ESM, from the package it documents', async () => {
      for (const name of ['express', 'koa', 'fastify']) {
        const readme = await readFile(join(project, 'node_modules/@fleetlimit', name, 'README.md'), 'utf8')
        await writeFile(join(project, `${name}-readme.mjs`), firstJsBlock(readme, name))
        expectLimited(await exerciseApp(project, `${name}-readme.mjs`), 'hello')
      }
    })

    it('installs the fleetlimit command line as core’s bin; without ioredis it says so in one line', async () => {
      const bin = join(project, 'node_modules/.bin/fleetlimit')
      const help = await run(bin, ['--help'], { cwd: project })
      expect(help.stdout).to.match(/^Usage: fleetlimit <command> \[tenant\] \[options\]\n/)
      const keys = await run(bin, ['keys'], { cwd: project }).catch(
        (error: { code?: number; stderr?: string }) => error,
      )
      expect(keys).to.include({
        code: 1,
        stderr: 'fleetlimit: the fleetlimit command line needs ioredis: npm install ioredis\n',
      })
    })

    it('type-checks core for a memory-only user: ioredis not installed, skipLibCheck off', async () => {
      expect(existsSync(join(project, 'node_modules/ioredis')), 'ioredis must not be installed here').to.equal(false)
      const consumer = `
  import { createRateLimiter, memoryStore } from '@fleetlimit/core'
  const limiter = createRateLimiter({ store: memoryStore(), limit: 2, window: '1s' })
  export const allowed: Promise<boolean> = limiter.consume('t').then((d) => d.allowed)
  `
      await writeFile(join(project, 'memory.mts'), consumer)
      await writeFile(join(project, 'memory.cts'), consumer)
      const tsc = join(root, 'node_modules/typescript/bin/tsc')
      // skipLibCheck off checks core's declaration files, whose imports must all resolve; TypeScript's own lib is not.
      const args = ['--noEmit', '--strict', '--skipLibCheck', 'false', '--skipDefaultLibCheck', '--lib', 'es2023']
      args.push('--module', 'nodenext', '--types', 'node')
      const result = await run(process.execPath, [tsc, ...args, 'memory.mts', 'memory.cts'], { cwd: project }).catch(
        (error: { stdout?: string }) => error,
      )
      expect(result.stdout, 'tsc reported errors').to.equal('')
    })
  })
}
