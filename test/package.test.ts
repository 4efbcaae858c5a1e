import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { mkdir, readFile, realpath, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { expect } from 'chai'
import { publint } from 'publint'
import { formatMessage } from 'publint/utils'
import { describeInstalls } from './packaging/installs.js'
import {
  type PackageName,
  type Packed,
  packageNames,
  packPackages,
  root,
  run,
  tarballFiles,
  unpack,
} from './packaging/pack.js'
import { redisUrl } from './support/root-hooks.js'

// Each peer as a consumer would have installed it: a copy in the workspace (a path from the repository's root).
const newestPeers: Record<string, string> = {
  ioredis: 'node_modules/ioredis',
  redis: 'node_modules/redis',
  express: 'node_modules/express',
  koa: 'node_modules/koa',
  fastify: 'node_modules/fastify',
  'fastify-plugin': 'packages/fastify/node_modules/fastify-plugin',
  '@types/express': 'node_modules/@types/express',
  '@types/koa': 'node_modules/@types/koa',
  '@types/node': 'node_modules/@types/node',
  // The newest 1.x, which the workspace's sdk-metrics (for 1.9) does not take: the otel entry needs only the API.
  '@opentelemetry/api': 'node_modules/opentelemetry-api-newest',
  '@opentelemetry/sdk-metrics': 'node_modules/@opentelemetry/sdk-metrics',
}
// The lowest versions of the peer ranges whose types or code the packed files use (aliases in the root
// package.json). Express and Koa ship no types of their own: their lowest versions run in test/packaging/lowest-peers.
const lowestPeers: Record<string, string> = {
  ...newestPeers,
  ioredis: 'node_modules/ioredis-lowest',
  redis: 'node_modules/redis-5',
  fastify: 'node_modules/fastify-lowest',
  '@opentelemetry/api': 'node_modules/opentelemetry-api-lowest',
}
// Each package's entries: the files a consumer loads; anything else in dist is a chunk they share.
const entries: Partial<Record<PackageName, string[]>> = { core: ['index', 'http', 'otel', 'store'] }
const CHUNK = /^[\w-]+-[\w-]{8}\.(mjs|cjs|d\.mts|d\.cts)$/
const REPOSITORY = 'https://github.com/fleetlimit/fleetlimit'

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
const toEsm = (cjs: string) => cjs.replace(/const (\{[^}]+\}) = require\('([^']+)'\)/g, "import $1 from '$2'")
// The optional OpenTelemetry entry, from each module system, with the tree's @opentelemetry/api: one limiter
// given a meter, one on the global MeterProvider; one allowed and one denied decision each, counted.
const otelCjs = `
const { createRateLimiter } = require('@fleetlimit/core')
const { instrumentLimiter } = require('@fleetlimit/core/otel')
const { metrics } = require('@opentelemetry/api')
const { MeterProvider, MetricReader } = require('@opentelemetry/sdk-metrics')
class Reader extends MetricReader { async onShutdown() {} async onForceFlush() {} }
const given = new Reader()
const viaGlobal = new Reader()
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [viaGlobal] }))
const a = createRateLimiter({ limit: 1, window: '1s', name: 'a' })
const b = createRateLimiter({ limit: 1, window: '1s', name: 'b' })
instrumentLimiter(a, { meter: new MeterProvider({ readers: [given] }).getMeter('t') })
instrumentLimiter(b)
const twice = (limiter) => limiter.consume('t').then(() => limiter.consume('t'))
const counted = async (reader) => {
  const { resourceMetrics } = await reader.collect()
  const decisions = resourceMetrics.scopeMetrics[0].metrics.find((m) => m.descriptor.name === 'fleetlimit.decisions')
  return decisions.dataPoints.map((p) => [p.attributes['fleetlimit.policy'], p.attributes['fleetlimit.outcome'], p.value])
}
Promise.all([twice(a), twice(b)]).then(async () => {
  console.log(JSON.stringify({ given: await counted(given), global: await counted(viaGlobal) }))
})
`
const otelEsm = toEsm(otelCjs)
// The Redis store on the tree's ioredis, imported as the README does (by name, which ioredis before 5.2.5
// lacks), from each module system: a limit of one, so one call is admitted and the next denied.
const redisCjs = `
const { Redis } = require('ioredis')
const { createRateLimiter, redisStore } = require('@fleetlimit/core')
const redis = new Redis(process.env.REDIS_URL)
const limiter = createRateLimiter({ store: redisStore(redis, { prefix: process.env.PREFIX }), limit: 1, window: '10s' })
limiter.consume('t').then(async (a) => {
  const b = await limiter.consume('t')
  await redis.quit()
  console.log(JSON.stringify([a.allowed, b.allowed]))
})
`
const redisEsm = toEsm(redisCjs)
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
import { Cluster, Redis } from 'ioredis'
import { createClient, createCluster } from 'redis'
const store = redisStore(new Redis({ lazyConnect: true }))
export const cluster = redisStore(new Cluster([{ host: '127.0.0.1', port: 7000 }], { lazyConnect: true }))
export const nodeRedis = redisStore(createClient())
export const nodeRedisCluster = redisStore(createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:7000' }] }))
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
// The route config's types travel in the built declarations: a misspelled route policy fails to compile.
// @ts-expect-error: \`limt\` is not \`limit\`
app.get('/typo', { config: { rateLimit: { limt: 5, window: '1m' } } }, async () => 'ok')
`

/** A consumer's folder: the unpacked packages in node_modules/@fleetlimit, and each peer linked from the workspace. */
async function makeTree(packed: Packed, dir: string, peers: Record<string, string>): Promise<void> {
  for (const name of packageNames) await unpack(packed.tarballs[name], join(dir, 'node_modules/@fleetlimit', name))
  for (const [peer, from] of Object.entries(peers)) {
    await mkdir(join(dir, 'node_modules', peer, '..'), { recursive: true })
    await symlink(await realpath(join(root, from)), join(dir, 'node_modules', peer))
  }
}

const version = (path: string): string => JSON.parse(readFileSync(join(root, path, 'package.json'), 'utf8')).version
const versions = (peers: Record<string, string>) =>
  ['ioredis', 'fastify', '@opentelemetry/api'].map((name) => `${name} ${version(peers[name] as string)}`).join(', ')

describe('the packed packages', function () {
  this.timeout(180_000)
  let packed: Packed
  const manifests = {} as Record<PackageName, Record<string, unknown>>

  const trees = [
    { name: 'newest', peers: newestPeers },
    { name: 'lowest', peers: lowestPeers },
  ] as const
  const treeDir = (name: string) => join(packed.dir, 'trees', name)

  before(async () => {
    packed = await packPackages()
    for (const name of packageNames) {
      await unpack(packed.tarballs[name], join(packed.dir, 'unpacked', name))
      manifests[name] = JSON.parse(await readFile(join(packed.dir, 'unpacked', name, 'package.json'), 'utf8'))
    }
    for (const tree of trees) await makeTree(packed, treeDir(tree.name), tree.peers)
  })

  it('ship the built entries, README, LICENSE, CHANGELOG and package.json, and nothing else', async () => {
    const license = await readFile(join(root, 'LICENSE'), 'utf8')
    for (const name of packageNames) {
      const files = await tarballFiles(packed.tarballs[name])
      expect(files.filter((file) => !file.startsWith('dist/')).sort(), name).to.deep.equal([
        'CHANGELOG.md',
        'LICENSE',
        'README.md',
        'package.json',
      ])
      const dist = files.filter((file) => file.startsWith('dist/')).map((file) => file.slice('dist/'.length))
      const expected = (entries[name] ?? ['index']).flatMap((e) => [`${e}.cjs`, `${e}.d.cts`, `${e}.d.mts`, `${e}.mjs`])
      // The command line is one ESM file with no types: it is run, never imported.
      if (name === 'core') expected.push('cli.mjs')
      expect(dist.filter((file) => !CHUNK.test(file)).sort(), name).to.deep.equal(expected.sort())
      const unpacked = join(packed.dir, 'unpacked', name)
      expect(await readFile(join(unpacked, 'LICENSE'), 'utf8'), `${name}: the root LICENSE`).to.equal(license)
      const readme = await readFile(join(unpacked, 'README.md'), 'utf8')
      expect(readme, name).to.include(`npm install @fleetlimit/${name}`)
      expect(readme, name).to.include(`${REPOSITORY}#readme`)
    }
  })

  it('publish manifests with the links npm shows, core by version, and no workspace-only field', () => {
    for (const name of packageNames) {
      const manifest = manifests[name]
      expect(manifest, name).to.include({ license: 'MIT', homepage: `${REPOSITORY}#readme` })
      expect(manifest.repository, name).to.deep.equal({
        type: 'git',
        url: `git+${REPOSITORY}.git`,
        directory: `packages/${name}`,
      })
      expect(manifest.bugs, name).to.deep.equal({ url: `${REPOSITORY}/issues` })
      expect(manifest.keywords, name).to.be.an('array').that.includes('rate-limit')
      const text = JSON.stringify(manifest)
      expect(text, name).to.not.include('workspace:')
      expect(text, `${name}: the workspace's source condition`).to.not.include('@fleetlimit/source')
      expect(manifest, name).to.not.have.property('publishConfig')
    }
  })

  it('export what the workspace exports, less the source condition, and every path is in the tarball', async () => {
    const withoutSource = (value: unknown): unknown =>
      value && typeof value === 'object'
        ? Object.fromEntries(
            Object.entries(value)
              .filter(([key]) => key !== '@fleetlimit/source')
              .map(([key, inner]) => [key, withoutSource(inner)]),
          )
        : value
    const paths = (value: unknown): string[] =>
      typeof value === 'string'
        ? [value]
        : value && typeof value === 'object'
          ? Object.values(value).flatMap(paths)
          : []
    for (const name of packageNames) {
      const workspace = JSON.parse(await readFile(join(root, 'packages', name, 'package.json'), 'utf8'))
      const manifest = manifests[name]
      expect(manifest.exports, name).to.deep.equal(withoutSource(workspace.exports))
      const files = new Set((await tarballFiles(packed.tarballs[name])).map((file) => `./${file}`))
      const targets = paths([
        manifest.exports,
        manifest.main,
        manifest.module,
        manifest.types,
        manifest.typesVersions,
        manifest.bin,
      ])
      expect(targets.length, name).to.be.above(4)
      for (const target of targets)
        expect(files.has(target.replace(/^(?!\.\/)/, './')), `${name}: ${target}`).to.equal(true)
    }
  })

  it('publint finds nothing to say of any tarball', async () => {
    for (const name of packageNames) {
      const tarball = (await readFile(packed.tarballs[name])).buffer as ArrayBuffer
      const { messages, pkg } = await publint({ pack: { tarball }, level: 'suggestion', strict: true })
      expect(
        messages.map((message) => `${message.type}: ${formatMessage(message, pkg)}`),
        name,
      ).to.deep.equal([])
    }
  })

  it('attw finds no problem in any entry, under node10, node16 (from CJS and ESM) and bundler', async () => {
    const attw = join(root, 'node_modules/@arethetypeswrong/cli/dist/index.js')
    const reports = await Promise.all(
      packageNames.map(async (name) => {
        // Exits 1 when it finds a problem: the report is still on stdout.
        const result = await run(process.execPath, [attw, packed.tarballs[name], '--format', 'json'], {
          maxBuffer: 64 * 1024 * 1024,
        }).catch((error: { stdout?: string }) => error)
        return JSON.parse(result.stdout ?? '{}') as AttwReport
      }),
    )
    for (const [i, name] of packageNames.entries()) {
      const { analysis } = reports[i] as AttwReport
      expect(
        analysis.problems.map((p) => `${p.kind} ${p.entrypoint ?? ''} ${p.resolutionKind ?? ''}`),
        name,
      ).to.deep.equal([])
      const subpaths = (entries[name] ?? ['index']).map((e) => (e === 'index' ? '.' : `./${e}`))
      expect(Object.keys(analysis.entrypoints).sort(), name).to.deep.equal([...subpaths, './package.json'].sort())
      for (const subpath of subpaths) {
        const { resolutions } = analysis.entrypoints[subpath] as AttwEntrypoint
        expect(Object.keys(resolutions).sort(), `${name} ${subpath}`).to.deep.equal([
          'bundler',
          'node10',
          'node16-cjs',
          'node16-esm',
        ])
        for (const [kind, { resolution }] of Object.entries(resolutions)) {
          expect(resolution?.fileName, `${name} ${subpath} ${kind}`).to.match(/\/dist\/[\w.-]+\.d\.[cm]ts$/)
        }
      }
    }
  })

  it('name no internal type of core in any .d.ts: the Store contract is its published types alone', async () => {
    const dist = join(packed.dir, 'unpacked/core/dist')
    const declarations = (await tarballFiles(packed.tarballs.core)).filter((f) => /^dist\/.*\.d\.[cm]ts$/.test(f))
    expect(declarations.length).to.be.greaterThan(8)
    for (const file of declarations) {
      const text = await readFile(join(dist, file.slice('dist/'.length)), 'utf8')
      const internal = text.match(/\b(ServerSet|ServerGuard|CallGate|CircuitBreaker|DeadlineQueue|ServerClock)\b/g)
      expect(internal, file).to.equal(null)
    }
  })

  it('keep @opentelemetry/api out of every file but the otel entry: core runs without it', async () => {
    const dist = join(packed.dir, 'unpacked/core/dist')
    for (const file of (await tarballFiles(packed.tarballs.core)).filter((f) => f.startsWith('dist/'))) {
      const text = await readFile(join(dist, file.slice('dist/'.length)), 'utf8')
      expect(text.includes('@opentelemetry/api'), file).to.equal(file.startsWith('dist/otel.'))
    }
  })

  for (const tree of trees) {
    describe(`loaded as a consumer loads them, with the ${tree.name} peers (${versions(tree.peers)})`, () => {
      const node = async (file: string, text: string, env: Record<string, string> = {}) => {
        await writeFile(join(treeDir(tree.name), file), text)
        const { stdout } = await run(process.execPath, [file], {
          cwd: treeDir(tree.name),
          env: { ...process.env, ...env },
        })
        return JSON.parse(stdout)
      }
      it('loads @fleetlimit/core/otel with require and with import, and counts decisions', async () => {
        for (const [file, text] of [
          ['otel.cjs', otelCjs],
          ['otel.mjs', otelEsm],
        ] as const) {
          expect(await node(file, text), file).to.deep.equal({
            given: [
              ['a', 'allowed', 1],
              ['a', 'denied', 1],
            ],
            global: [
              ['b', 'allowed', 1],
              ['b', 'denied', 1],
            ],
          })
        }
      })

      it('runs the Redis store on ioredis imported by name, with require and with import', async () => {
        for (const [file, text] of [
          ['redis.cjs', redisCjs],
          ['redis.mjs', redisEsm],
        ] as const) {
          const env = { REDIS_URL: redisUrl(), PREFIX: `fltest-${randomBytes(6).toString('hex')}` }
          expect(await node(file, text, env), file).to.deep.equal([true, false])
        }
      })

      it('loads every adapter with require and with import, and builds its middleware', async () => {
        for (const [file, text] of [
          ['adapters.cjs', adaptersCjs],
          ['adapters.mjs', adaptersEsm],
        ] as const) {
          expect(await node(file, text), file).to.deep.equal({
            express: 'function',
            koa: 'function',
            fastify: 'function',
          })
        }
      })

      it('loads with require, and an ESM copy’s error is branded for the CJS copy', async () => {
        expect(await node('consumer.cjs', cjsConsumer)).to.deep.equal({
          a: true,
          b: false,
          crossCopy: true,
          sameClass: false,
        })
      })

      it('loads with import', async () => {
        expect(await node('consumer.mjs', esmConsumer)).to.deep.equal({ allowed: true, remaining: 1 })
      })
    })
  }

  it('type-check from TypeScript as ESM (.d.mts) and CJS (.d.cts), with skipLibCheck off, with either peers', async () => {
    const tsc = join(root, 'node_modules/typescript/bin/tsc')
    // skipLibCheck off checks every declaration file, the packages' own included: their imports must resolve.
    // The default library is TypeScript's own, left unchecked; the trees are checked side by side.
    const args = ['--noEmit', '--strict', '--skipLibCheck', 'false', '--skipDefaultLibCheck', '--lib', 'es2023']
    const outputs = await Promise.all(
      trees.map(async (tree) => {
        const dir = treeDir(tree.name)
        await writeFile(join(dir, 'consumer.mts'), tsConsumer)
        await writeFile(join(dir, 'consumer.cts'), tsConsumer)
        const options = [...args, '--module', 'nodenext', '--types', 'node', 'consumer.mts', 'consumer.cts']
        const result = await run(process.execPath, [tsc, ...options], { cwd: dir }).catch(
          (error: { stdout?: string }) => error,
        )
        return result.stdout
      }),
    )
    expect(outputs, 'tsc reported errors (newest peers, lowest peers)').to.deep.equal(['', ''])
  })
})

interface AttwEntrypoint {
  readonly resolutions: Record<string, { readonly resolution?: { readonly fileName: string } }>
}
interface AttwReport {
  readonly analysis: {
    readonly problems: readonly { kind: string; entrypoint?: string; resolutionKind?: string }[]
    readonly entrypoints: Record<string, AttwEntrypoint>
  }
}

describeInstalls()
