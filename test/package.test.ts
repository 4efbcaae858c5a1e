import { execFile } from 'node:child_process'
import { cp, mkdir, mkdtemp, readdir, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { expect } from 'chai'

const run = promisify(execFile)
const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const packages = ['core', 'express', 'koa', 'fastify']
// Each peer as a consumer would have installed it, taken from the workspace package that depends on it.
const peers = {
  ioredis: 'node_modules',
  express: 'node_modules',
  koa: 'node_modules',
  fastify: 'node_modules',
  'fastify-plugin': 'packages/fastify/node_modules',
  '@types/express': 'node_modules',
  '@types/koa': 'node_modules',
  '@opentelemetry/api': 'node_modules',
  '@opentelemetry/sdk-metrics': 'node_modules',
}
// Each package's entries: the files a consumer loads; anything else in dist is a chunk they share.
const entries: Record<string, string[]> = { core: ['index', 'http', 'otel'] }
const CHUNK = /^[\w]+-[\w-]{8}\.(mjs|cjs|d\.mts|d\.cts)$/

// What a consumer does with the published tarball: a limiter from each module system, and an error
// thrown by one copy recognised by the other copy's isFleetlimitError.
const cjsConsumer = `
const core = require('@fleetlimit/core')
const limiter = core.createRateLimiter({ limit: 1, window: '1s' })
Promise.all([limiter.consume('t'), limiter.consume('t')]).then(async ([a, b]) => {
  const esm = await import('@fleetlimit/core')
  let error
  try { esm.definePolicy({ limit: 0, window: '1s' }) } catch (e) { error = e }
  console.log(JSON.stringify({ a: a.allowed, b: b.allowed, crossCopy: core.isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION'), sameClass: error instanceof core.OptionError }))
})
`
const esmConsumer = `
import { createRateLimiter, memoryStore } from '@fleetlimit/core'
const limiter = createRateLimiter({ store: memoryStore(), limit: 2, window: 1000 })
const d = await limiter.consume('t')
console.log(JSON.stringify({ allowed: d.allowed, remaining: d.remaining }))
`
const adaptersCjs = `
const { rateLimit: express } = require('@fleetlimit/express')
const { rateLimit: koa } = require('@fleetlimit/koa')
const { rateLimit: fastify } = require('@fleetlimit/fastify')
const options = { limit: 5, window: '1s' }
console.log(JSON.stringify({ express: typeof express(options), koa: typeof koa(options), fastify: typeof fastify }))
`
const adaptersEsm = adaptersCjs.replace(
  /const \{ rateLimit: (\w+) \} = require\('([^']+)'\)/g,
  "import { rateLimit as $1 } from '$2'",
)
// The optional OpenTelemetry entry, from each module system: one allowed and one denied decision, counted.
const otelCjs = `
const { createRateLimiter } = require('@fleetlimit/core')
const { instrumentLimiter } = require('@fleetlimit/core/otel')
const { MeterProvider, MetricReader } = require('@opentelemetry/sdk-metrics')
class Reader extends MetricReader { async onShutdown() {} async onForceFlush() {} }
const reader = new Reader()
const limiter = createRateLimiter({ limit: 1, window: '1s' })
instrumentLimiter(limiter, { meter: new MeterProvider({ readers: [reader] }).getMeter('t') })
limiter.consume('t').then(() => limiter.consume('t')).then(async () => {
  const { resourceMetrics } = await reader.collect()
  const decisions = resourceMetrics.scopeMetrics[0].metrics.find((m) => m.descriptor.name === 'fleetlimit.decisions')
  console.log(JSON.stringify(decisions.dataPoints.map((p) => [p.attributes['fleetlimit.outcome'], p.value])))
})
`
const otelEsm = otelCjs.replace(/const (\{[^}]+\}) = require\('([^']+)'\)/g, "import $1 from '$2'")
const tsConsumer = `
import { createRateLimiter, type Decision, definePolicy, redisStore } from '@fleetlimit/core'
import { rateLimit as expressRateLimit } from '@fleetlimit/express'
import { rateLimit as fastifyRateLimit } from '@fleetlimit/fastify'
import { rateLimit as koaRateLimit } from '@fleetlimit/koa'
import { instrumentLimiter } from '@fleetlimit/core/otel'
import { metrics } from '@opentelemetry/api'
import express from 'express'
import Fastify from 'fastify'
import Koa from 'koa'
import { Redis } from 'ioredis'
const store = redisStore(new Redis({ lazyConnect: true }))
const limiter = createRateLimiter({ store, limit: 1, window: '1m' })
export const decision: Promise<Decision> = limiter.consume('t', { cost: 1 })
export const detach: () => void = instrumentLimiter(limiter, { meter: metrics.getMeter('app') })
const search = definePolicy({ name: 'search', limit: 5, window: '10s' })
express().get('/search', expressRateLimit({ store, policy: search, tenant: (req) => req.ip ?? '' }))
new Koa().use(koaRateLimit({ store, policies: [search], skip: (ctx) => ctx.path === '/health' }))
const app = Fastify()
export const ready = app.register(fastifyRateLimit, { store, limit: 100, window: '1m' }).then(() =>
  app.get('/search', { config: { rateLimit: search } }, async () => 'ok'),
)
`

describe('the packed packages load as a consumer loads them', function () {
  this.timeout(180_000)
  let dir: string

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fleetlimit-pack-'))
    const modules = join(dir, 'node_modules')
    await mkdir(join(modules, '@fleetlimit'), { recursive: true })
    await mkdir(join(modules, '@types'), { recursive: true })
    await mkdir(join(modules, '@opentelemetry'), { recursive: true })
    for (const name of packages) {
      const packageDir = join(root, 'packages', name)
      await run('pnpm', ['run', 'build'], { cwd: packageDir })
      await run('pnpm', ['pack', '--pack-destination', dir], { cwd: packageDir })
      const tarball = (await readdir(dir)).find((file) => file.startsWith(`fleetlimit-${name}-`)) as string
      await mkdir(join(dir, name))
      await run('tar', ['-xzf', join(dir, tarball), '-C', join(dir, name)])
      await cp(join(dir, name, 'package'), join(modules, '@fleetlimit', name), { recursive: true })
    }
    for (const [peer, from] of Object.entries(peers)) {
      await symlink(await realpath(join(root, from, peer)), join(modules, peer))
    }
  })
  after(() => (process.env.KEEP_PACK ? undefined : rm(dir, { recursive: true, force: true })))

  it('ships only the built files, depending on core by version', async () => {
    for (const name of packages) {
      const files = await readdir(join(dir, `node_modules/@fleetlimit/${name}/dist`))
      const expected = (entries[name] ?? ['index']).flatMap((e) => [`${e}.cjs`, `${e}.d.cts`, `${e}.d.mts`, `${e}.mjs`])
      expect(files.filter((file) => !CHUNK.test(file)).sort(), name).to.deep.equal(expected.sort())
      const manifest = JSON.parse(await readFile(join(dir, `node_modules/@fleetlimit/${name}/package.json`), 'utf8'))
      expect(JSON.stringify(manifest), name).to.not.include('workspace:')
    }
  })

  it('keeps @opentelemetry/api out of every file but the otel entry: core runs without it', async () => {
    const distDir = join(dir, 'node_modules/@fleetlimit/core/dist')
    for (const file of await readdir(distDir)) {
      const text = await readFile(join(distDir, file), 'utf8')
      expect(text.includes('@opentelemetry/api'), file).to.equal(file.startsWith('otel.'))
    }
  })

  it('loads @fleetlimit/core/otel with require and with import, and counts decisions', async () => {
    await writeFile(join(dir, 'otel.cjs'), otelCjs)
    await writeFile(join(dir, 'otel.mjs'), otelEsm)
    for (const file of ['otel.cjs', 'otel.mjs']) {
      const { stdout } = await run(process.execPath, [file], { cwd: dir })
      expect(JSON.parse(stdout), file).to.deep.equal([
        ['allowed', 1],
        ['denied', 1],
      ])
    }
  })

  it('loads every adapter with require and with import, and builds its middleware', async () => {
    await writeFile(join(dir, 'adapters.cjs'), adaptersCjs)
    await writeFile(join(dir, 'adapters.mjs'), adaptersEsm)
    for (const file of ['adapters.cjs', 'adapters.mjs']) {
      const { stdout } = await run(process.execPath, [file], { cwd: dir })
      expect(JSON.parse(stdout), file).to.deep.equal({ express: 'function', koa: 'function', fastify: 'function' })
    }
  })

  it('loads with require, and an ESM copy’s error is branded for the CJS copy', async () => {
    await writeFile(join(dir, 'consumer.cjs'), cjsConsumer)
    const { stdout } = await run(process.execPath, ['consumer.cjs'], { cwd: dir })
    expect(JSON.parse(stdout)).to.deep.equal({ a: true, b: false, crossCopy: true, sameClass: false })
  })

  it('loads with import', async () => {
    await writeFile(join(dir, 'consumer.mjs'), esmConsumer)
    const { stdout } = await run(process.execPath, ['consumer.mjs'], { cwd: dir })
    expect(JSON.parse(stdout)).to.deep.equal({ allowed: true, remaining: 1 })
  })

  it('type-checks from TypeScript as ESM (.d.mts) and as CJS (.d.cts)', async () => {
    await writeFile(join(dir, 'consumer.mts'), tsConsumer)
    await writeFile(join(dir, 'consumer.cts'), tsConsumer)
    const tsc = join(root, 'node_modules/typescript/bin/tsc')
    const args = ['--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext']
    const result = await run(process.execPath, [tsc, ...args, 'consumer.mts', 'consumer.cts'], { cwd: dir }).catch(
      (error: { stdout?: string }) => error,
    )
    expect(result.stdout, 'tsc reported errors').to.equal('')
  })
})
