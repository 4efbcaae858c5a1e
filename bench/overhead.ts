// Overhead part: HTTP throughput of Express, Fastify and Koa with each rate limiter, as a ratio to the same
// framework bare. The machine's speed drifts by up to 2x within a minute, so slices of 1.3 s alternate
// between the bare server and the limited ones, and each limited slice is divided by the bare rate at its
// own moment (interpolated between the bare slices around it): ratios, never absolute rates, are compared.
import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import fastifyRateLimit, { type RateLimitPluginOptions } from '@fastify/rate-limit'
import { createRateLimiter, type LimiterStats, type LocalOptions, redisStore } from '@fleetlimit/core'
import { rateLimit as fleetExpress } from '@fleetlimit/express'
import { type FastifyRateLimitOptions, rateLimit as fleetFastify } from '@fleetlimit/fastify'
import { rateLimit as fleetKoa } from '@fleetlimit/koa'
import express, { type RequestHandler } from 'express'
import expressRateLimit from 'express-rate-limit'
import Fastify, { type FastifyPluginAsync } from 'fastify'
import { Redis } from 'ioredis'
import Koa, { type Middleware } from 'koa'
import koaRateLimit from 'koa-ratelimit'
import { type RedisReply, RedisStore } from 'rate-limit-redis'
import { RateLimiterRedis } from 'rate-limiter-flexible'
import { startRedisServer } from '../test/support/redis-server.js'
import { type LoadGenerator, startLoadGenerator } from './loadgen.js'
import type { PartResult } from './run.js'
import { barChart } from './svg.js'

export type Framework = 'Express' | 'Fastify' | 'Koa'
export type LoadName = 'admitted' | 'denied' | 'hot tenants' | 'cold keys'

export interface OverheadOptions {
  /** Measured slices per limiter and load. */
  readonly rounds?: number
  readonly sliceMs?: number
  /** A bare slice after every this many limited slices (and before the first). */
  readonly bareEvery?: number
  /** Unmeasured load on every server first: JIT warm-up, and the denied loads' keys exhausted. */
  readonly warmMs?: number
  /** autocannon connections (pipelining 1). */
  readonly connections?: number
  readonly frameworks?: readonly Framework[]
}

// 26 rows in all: 6 slices of 1.3 s each, with the bare slices between them, take about 6 minutes.
const FULL = { rounds: 6, sliceMs: 1_300, bareEvery: 2, warmMs: 500, connections: 10 }
const FRAMEWORKS: readonly Framework[] = ['Express', 'Fastify', 'Koa']

interface Load {
  readonly limit: number
  readonly windowMs: number
  /** Distinct `x-tenant` values the generator cycles through; fleetlimit keys by it when `byHeader`. */
  readonly tenants: number
  readonly byHeader: boolean
  readonly status: number
}

const LOADS: Readonly<Record<LoadName, Load>> = {
  // Far above the load: every request admitted, one key (the client IP) for every limiter.
  admitted: { limit: 1_000_000_000, windowMs: 60_000, tenants: 1, byHeader: false, status: 200 },
  // A limit of 1 per hour, exhausted during the warm-up: every measured request denied.
  denied: { limit: 1, windowMs: 3_600_000, tenants: 1, byHeader: false, status: 429 },
  'hot tenants': { limit: 1_000_000_000, windowMs: 60_000, tenants: 4, byHeader: true, status: 200 },
  'cold keys': { limit: 1_000_000_000, windowMs: 60_000, tenants: 5_000, byHeader: true, status: 200 },
}

type Peer = 'express-rate-limit' | 'rate-limiter-flexible' | '@fastify/rate-limit' | 'koa-ratelimit'
const STORE_ONLY = 'fleetlimit, store only'
const LOCAL_TIER = 'fleetlimit, local tier'
type LimiterName = Peer | typeof STORE_ONLY | typeof LOCAL_TIER

const PEERS: Readonly<Record<Framework, readonly Peer[]>> = {
  Express: ['express-rate-limit', 'rate-limiter-flexible'],
  Fastify: ['@fastify/rate-limit'],
  Koa: ['koa-ratelimit'],
}
/** The local tier as a hot key would use it: the deny cache (on by default) and auto-sized leases. */
const LOCAL: LocalOptions = { lease: 'auto' }

/** limited/bare measured elsewhere, for the same loads. */
const REFERENCE: Readonly<Record<Peer, Readonly<Record<'admitted' | 'denied', number>>>> = {
  'express-rate-limit': { admitted: 0.7, denied: 0.82 },
  'rate-limiter-flexible': { admitted: 0.86, denied: 0.76 },
  '@fastify/rate-limit': { admitted: 0.65, denied: 0.57 },
  'koa-ratelimit': { admitted: 0.64, denied: 0.67 },
}

/** What a server puts in front of its handler. */
type Guard =
  | { readonly kind: Peer; readonly load: Load; readonly client: Redis; readonly prefix: string }
  | {
      readonly kind: 'fleetlimit'
      readonly load: Load
      readonly limiter: ReturnType<typeof createRateLimiter>
    }

interface Target {
  readonly url: string
  close(): Promise<void>
}

async function listen(server: Server): Promise<Target> {
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/`,
    async close() {
      server.closeAllConnections()
      server.close()
      await once(server, 'close')
    },
  }
}

function expressGuard(guard: Guard): RequestHandler {
  const { limit, windowMs } = guard.load
  switch (guard.kind) {
    case 'express-rate-limit':
      return expressRateLimit({
        windowMs,
        limit,
        standardHeaders: 'draft-8',
        legacyHeaders: false,
        store: new RedisStore({
          prefix: guard.prefix,
          sendCommand: (command: string, ...args: string[]) =>
            guard.client.call(command, ...args) as Promise<RedisReply>,
        }),
      })
    case 'rate-limiter-flexible': {
      // The minimal middleware of its documentation.
      const limiter = new RateLimiterRedis({
        storeClient: guard.client,
        points: limit,
        duration: windowMs / 1000,
        keyPrefix: guard.prefix,
      })
      return (req, res, next) => {
        limiter.consume(req.ip ?? '').then(
          () => next(),
          () => {
            res.status(429).send('Too Many Requests')
          },
        )
      }
    }
    case 'fleetlimit':
      return fleetExpress({
        limiter: guard.limiter,
        ...(guard.load.byHeader && { tenant: (req) => String(req.headers['x-tenant']) }),
      })
    default:
      throw new Error(`${guard.kind} is not an Express limiter`)
  }
}

async function expressServer(guard: Guard | undefined): Promise<Target> {
  const app = express()
  app.disable('x-powered-by')
  if (guard) app.use(expressGuard(guard))
  app.get('/', (_req, res) => {
    res.json({ ok: true })
  })
  return listen(createServer(app))
}

// Both plugins are typed against the workspace's fastify, the app against the bench's pinned copy.
const fastifyPeer = fastifyRateLimit as unknown as FastifyPluginAsync<RateLimitPluginOptions>
const fastifyOurs = fleetFastify as unknown as FastifyPluginAsync<FastifyRateLimitOptions>

async function fastifyServer(guard: Guard | undefined): Promise<Target> {
  const app = Fastify()
  if (guard?.kind === '@fastify/rate-limit') {
    await app.register(fastifyPeer, {
      max: guard.load.limit,
      timeWindow: guard.load.windowMs,
      redis: guard.client,
      nameSpace: guard.prefix,
    })
  } else if (guard?.kind === 'fleetlimit') {
    await app.register(fastifyOurs, {
      limiter: guard.limiter,
      ...(guard.load.byHeader && { tenant: (request) => String(request.headers['x-tenant']) }),
    })
  } else if (guard) throw new Error(`${guard.kind} is not a Fastify limiter`)
  app.get('/', async () => ({ ok: true }))
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}/`, close: () => app.close() }
}

function koaGuard(guard: Guard): Middleware {
  switch (guard.kind) {
    case 'koa-ratelimit':
      return koaRateLimit({
        driver: 'redis',
        // Typed against ioredis 4 (@types/ioredis); the client is ioredis 5, as its README uses.
        db: guard.client as unknown as KoaRateLimitOptions['db'],
        duration: guard.load.windowMs,
        max: guard.load.limit,
        id: (ctx) => ctx.ip,
        namespace: guard.prefix,
      })
    case 'fleetlimit':
      return fleetKoa({
        limiter: guard.limiter,
        ...(guard.load.byHeader && { tenant: (ctx) => ctx.get('x-tenant') }),
      })
    default:
      throw new Error(`${guard.kind} is not a Koa limiter`)
  }
}

async function koaServer(guard: Guard | undefined): Promise<Target> {
  const app = new Koa()
  if (guard) app.use(koaGuard(guard))
  app.use((ctx) => {
    ctx.body = { ok: true }
  })
  return listen(createServer(app.callback()))
}

type KoaRateLimitOptions = NonNullable<Parameters<typeof koaRateLimit>[0]>

const SERVE: Readonly<Record<Framework, (guard: Guard | undefined) => Promise<Target>>> = {
  Express: expressServer,
  Fastify: fastifyServer,
  Koa: koaServer,
}

interface Cell {
  readonly limiter: LimiterName
  readonly load: LoadName
  readonly target: Target
  readonly client: Redis
  readonly stats?: () => LimiterStats
}

interface Slice {
  /** Index into the cells, or -1 for the bare server. */
  readonly cell: number
  /** Midpoint, in ms of this process's clock. */
  readonly at: number
  readonly rate: number
  readonly responses: number
  readonly unexpected: number
  readonly errors: number
}

export interface OverheadRow {
  readonly limiter: LimiterName
  readonly load: LoadName
  /** limited/bare per slice, in the order measured. */
  readonly ratios: number[]
  readonly median: number
  readonly min: number
  readonly max: number
  /** Median responses per second of the limited server itself, for context only. */
  readonly medianRate: number
  /** Responses whose status was not the load's (200 admitted, 429 denied), plus connection errors. */
  readonly unexpected: number
  /** fleetlimit only: store calls (lease returns included) per measured response. */
  readonly storeCallsPerRequest?: number
  /** fleetlimit only: the limiter's counters over the measured slices. */
  readonly stats?: Readonly<Record<string, number>>
  readonly reference?: number
  readonly target?: { readonly text: string; readonly met: boolean }
}

export interface OverheadFramework {
  readonly framework: Framework
  readonly bare: { readonly rates: number[]; readonly median: number; readonly min: number; readonly max: number }
  readonly rows: OverheadRow[]
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length / 2
  return sorted.length % 2 === 1
    ? (sorted[Math.floor(mid)] as number)
    : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2
}

async function buildCells(framework: Framework, redisUrl: string): Promise<Cell[]> {
  const cells: Cell[] = []
  const plan: [LimiterName, LoadName[]][] = [
    ...PEERS[framework].map((peer): [LimiterName, LoadName[]] => [peer, ['admitted', 'denied']]),
    [STORE_ONLY, ['admitted', 'denied']],
    [LOCAL_TIER, ['admitted', 'denied', 'hot tenants', 'cold keys']],
  ]
  for (const [limiter, loads] of plan) {
    for (const loadName of loads) {
      const load = LOADS[loadName]
      // One connection per server, as an application has; distinct prefixes so no two servers share a key.
      const client = new Redis(redisUrl)
      await once(client, 'ready')
      const prefix = `overhead-${framework}-${cells.length}`.toLowerCase()
      let guard: Guard
      let stats: (() => LimiterStats) | undefined
      if (limiter === STORE_ONLY || limiter === LOCAL_TIER) {
        const rateLimiter = createRateLimiter({
          store: redisStore(client, { prefix }),
          limit: load.limit,
          window: load.windowMs,
          local: limiter === LOCAL_TIER ? LOCAL : false,
        })
        guard = { kind: 'fleetlimit', load, limiter: rateLimiter }
        stats = () => rateLimiter.stats()
      } else guard = { kind: limiter, load, client, prefix: `${prefix}:` }
      const target = await SERVE[framework](guard)
      cells.push({ limiter, load: loadName, target, client, ...(stats && { stats }) })
    }
  }
  return cells
}

async function measureFramework(
  framework: Framework,
  redisUrl: string,
  loadgen: LoadGenerator,
  settings: typeof FULL,
): Promise<OverheadFramework> {
  const bare = await SERVE[framework](undefined)
  const cells = await buildCells(framework, redisUrl)
  try {
    const run = async (cell: number, durationMs: number): Promise<Slice> => {
      const target = cell < 0 ? bare : (cells[cell] as Cell).target
      const load = cell < 0 ? undefined : LOADS[(cells[cell] as Cell).load]
      const started = performance.now()
      const result = await loadgen.run({
        url: target.url,
        durationMs,
        connections: settings.connections,
        tenants: load?.tenants ?? 1,
      })
      const expected = result.statuses[String(load?.status ?? 200)] ?? 0
      return {
        cell,
        at: (started + performance.now()) / 2,
        rate: result.responses / (result.ms / 1000),
        responses: result.responses,
        unexpected: result.responses - expected + result.errors,
        errors: result.errors,
      }
    }
    for (let cell = -1; cell < cells.length; cell++) await run(cell, settings.warmMs)
    const statsBefore = cells.map((cell) => cell.stats?.())

    // Each round visits every cell, starting one further along, so no cell always follows the same one.
    const order: number[] = []
    for (let round = 0; round < settings.rounds; round++) {
      for (let i = 0; i < cells.length; i++) order.push((round + i) % cells.length)
    }
    const slices: Slice[] = [await run(-1, settings.sliceMs)]
    for (const [i, cell] of order.entries()) {
      slices.push(await run(cell, settings.sliceMs))
      if ((i + 1) % settings.bareEvery === 0 || i === order.length - 1) slices.push(await run(-1, settings.sliceMs))
    }

    const bareSlices = slices.filter((s) => s.cell < 0)
    const bareAt = (at: number) => {
      const before = bareSlices.filter((s) => s.at < at).at(-1) as Slice
      const after = bareSlices.find((s) => s.at > at) as Slice
      return before.rate + ((after.rate - before.rate) * (at - before.at)) / (after.at - before.at)
    }
    const rows = cells.map((cell, index): OverheadRow => {
      const own = slices.filter((s) => s.cell === index)
      const ratios = own.map((s) => s.rate / bareAt(s.at))
      const before = statsBefore[index]
      const after = cell.stats?.()
      const responses = own.reduce((sum, s) => sum + s.responses, 0)
      return {
        limiter: cell.limiter,
        load: cell.load,
        ratios,
        median: median(ratios),
        min: Math.min(...ratios),
        max: Math.max(...ratios),
        medianRate: median(own.map((s) => s.rate)),
        unexpected: own.reduce((sum, s) => sum + s.unexpected, 0),
        ...(before &&
          after && {
            storeCallsPerRequest:
              (after.storeCalls + after.releaseCalls - before.storeCalls - before.releaseCalls) / responses,
            stats: Object.fromEntries(
              Object.entries(after).map(([name, value]) => [name, value - before[name as keyof LimiterStats]]),
            ),
          }),
      }
    })
    const bareRates = bareSlices.map((s) => s.rate)
    return {
      framework,
      bare: { rates: bareRates, median: median(bareRates), min: Math.min(...bareRates), max: Math.max(...bareRates) },
      rows: rows.map((row) => withTargets(row, rows)),
    }
  } finally {
    await bare.close()
    for (const cell of cells) {
      await cell.target.close()
      cell.client.disconnect()
    }
  }
}

/** The reference ratio for a peer, and this issue's targets for fleetlimit, stated next to the numbers. */
function withTargets(row: OverheadRow, rows: readonly OverheadRow[]): OverheadRow {
  const load = row.load
  if (row.limiter in REFERENCE && (load === 'admitted' || load === 'denied')) {
    return { ...row, reference: REFERENCE[row.limiter as Peer][load] }
  }
  if (row.limiter === STORE_ONLY) {
    const peers = rows.filter((r) => r.load === load && r.limiter in REFERENCE)
    const best = peers.reduce((a, b) => (b.median > a.median ? b : a))
    return {
      ...row,
      target: { text: `≥ best peer (${best.limiter} ${best.median.toFixed(2)})`, met: row.median >= best.median },
    }
  }
  if (row.limiter === LOCAL_TIER && load === 'denied')
    return { ...row, target: { text: '≥ 0.95', met: row.median >= 0.95 } }
  if (row.limiter === LOCAL_TIER && load === 'hot tenants') {
    return { ...row, target: { text: '≥ 0.90', met: row.median >= 0.9 } }
  }
  return row
}

const LOAD_TEXT: Readonly<Record<LoadName, string>> = {
  admitted: 'all admitted (1 key)',
  denied: 'all denied (1 key, exhausted)',
  'hot tenants': '4 hot tenants',
  'cold keys': '5 000 cold keys',
}

export async function overhead(options: OverheadOptions = {}): Promise<PartResult> {
  const { frameworks = FRAMEWORKS, ...sizes } = options
  const settings = { ...FULL, ...sizes }
  const started = performance.now()
  const server = await startRedisServer()
  const loadgen = await startLoadGenerator()
  const results: OverheadFramework[] = []
  try {
    for (const framework of frameworks) results.push(await measureFramework(framework, server.url, loadgen, settings))
  } finally {
    await loadgen.close()
    await server.stop()
  }
  const seconds = (performance.now() - started) / 1000

  const f2 = (n: number) => n.toFixed(2)
  const rate = (n: number) => Math.round(n).toLocaleString('en')
  const markdown = [
    `HTTP responses per second of each framework with a limiter, divided by the same framework bare (a handler`,
    `answering \`{"ok":true}\`), per slice of ${settings.sliceMs / 1000} s. autocannon (${settings.connections} connections,`,
    `no pipelining) runs in a child process; the servers run in the bench process, one Node process serving as`,
    `in production; every limiter uses its own ioredis connection to one redis-server. On a two-core machine the`,
    `three processes share the cores, so a limiter's ratio includes the CPU its Redis calls cost the server.`,
    `A bare slice comes before every ${settings.bareEvery} limited slices and after the last; each limited slice is`,
    `divided by the bare rate interpolated to its midpoint. ${settings.rounds} slices per row; took ${seconds.toFixed(0)} s.`,
    '',
    `Loads: all admitted = a limit of 1e9 per minute on one key (the client IP, 127.0.0.1, for every limiter);`,
    `all denied = a limit of 1 per hour, exhausted during a ${settings.warmMs} ms warm-up; hot tenants and cold keys`,
    `= fleetlimit keyed by an \`x-tenant\` header cycling through 4 or 5 000 values (every slice, bare ones`,
    `included, sends that header). fleetlimit's local tier: the deny cache (default) and \`lease: 'auto'\`.`,
    '',
    ...results.flatMap((r) => [
      `### ${r.framework}`,
      '',
      `Bare: median ${rate(r.bare.median)} responses/s (${rate(r.bare.min)}–${rate(r.bare.max)}) over ${r.bare.rates.length} slices.`,
      '',
      '| limiter | load | limited / bare (median) | min–max | slices | limited responses/s (median) | store calls / request | reference elsewhere | target |',
      '|---|---|---|---|---|---|---|---|---|',
      ...r.rows.map(
        (row) =>
          `| ${row.limiter} | ${LOAD_TEXT[row.load]} | ${f2(row.median)} | ${f2(row.min)}–${f2(row.max)} | ${row.ratios.length} | ` +
          `${rate(row.medianRate)}${row.unexpected > 0 ? ` (${row.unexpected} unexpected)` : ''} | ` +
          `${row.storeCallsPerRequest === undefined ? '' : row.storeCallsPerRequest.toFixed(3)} | ` +
          `${row.reference === undefined ? '' : f2(row.reference)} | ` +
          `${row.target === undefined ? '' : `${row.target.text}: ${row.target.met ? 'met' : 'not met'}`} |`,
      ),
      '',
    ]),
  ].join('\n')

  const loadsOf = (r: OverheadFramework) => [...new Set(r.rows.map((row) => row.load))]
  const ratios = barChart({
    title: 'HTTP throughput with a rate limiter, relative to the bare framework',
    yLabel: 'limited / bare (median, min–max)',
    groups: results.flatMap((r) =>
      loadsOf(r).map((load) => ({
        name: `${r.framework} ${load}`,
        bars: r.rows
          .filter((row) => row.load === load)
          .map((row) => ({ name: row.limiter, value: row.median, low: row.min, high: row.max })),
      })),
    ),
    hLines: [{ y: 1, label: 'bare' }],
  })
  return {
    title: 'Overhead: HTTP throughput with each rate limiter, relative to the bare framework',
    markdown,
    data: { settings: { ...settings, frameworks }, seconds, frameworks: results },
    charts: { ratios },
  }
}
