// The overhead and decisions bench parts at a tiny size: every framework, limiter and load has a row, and
// every number is finite and positive. Timing is never asserted: the numbers of a tiny run mean nothing.
import { expect } from 'chai'
import { type BenchmarkRow, type DecisionsRow, decisions } from '../../bench/decisions.js'
import { MEMORY_PEERS } from '../../bench/memory-peers.js'
import { overhead } from '../../bench/overhead.js'
import type { OverheadFramework } from '../../bench/overhead-slices.js'
import { PEERS } from '../../bench/peers.js'

const positive = (value: unknown, what: string) => {
  expect(value, what).to.be.a('number')
  expect(Number.isFinite(value) && (value as number) > 0, `${what} = ${String(value)}`).to.equal(true)
}

const OURS = [
  ['fleetlimit, store only', 'admitted'],
  ['fleetlimit, store only', 'denied'],
  ['fleetlimit, local tier', 'admitted'],
  ['fleetlimit, local tier', 'denied'],
  ['fleetlimit, local tier', 'hot tenants'],
  ['fleetlimit, local tier', 'cold keys'],
]
const peerRows = (framework: string) =>
  PEERS.filter((peer) => peer.framework === framework).flatMap((peer) => [
    [peer.id, 'admitted'],
    [peer.id, 'denied'],
  ])
// In memory: the peers' own stores, fleetlimit's memory store, and the floor under them.
const memoryRows = (framework: 'Express' | 'Fastify' | 'Koa') =>
  [
    ...MEMORY_PEERS.filter((peer) => peer.frameworks.includes(framework)).map((peer) => peer.id),
    'fleetlimit, memory store',
    'floor: Map counter, same headers',
  ].flatMap((limiter) => [
    [limiter, 'admitted'],
    [limiter, 'denied'],
  ])
const EXPECTED_ROWS: Record<string, string[][]> = {
  Express: [...peerRows('Express'), ...OURS, ...memoryRows('Express')],
  Fastify: [...peerRows('Fastify'), ...OURS, ...memoryRows('Fastify')],
  Koa: [...peerRows('Koa'), ...OURS, ...memoryRows('Koa')],
}

describe('bench parts: overhead and decisions (tiny)', () => {
  it('overhead: a ratio row for every framework, limiter and load', async function () {
    this.timeout(90_000)
    const result = await overhead({ rounds: 1, sliceMs: 100, warmMs: 50, bareEvery: 2 })
    const { frameworks } = result.data as { frameworks: OverheadFramework[] }
    expect(frameworks.map((f) => f.framework)).to.deep.equal(['Express', 'Fastify', 'Koa'])
    for (const { framework, bare, rows } of frameworks) {
      positive(bare.median, `${framework} bare median`)
      expect(bare.rates.length, `${framework} bare slices`).to.be.greaterThan(1)
      for (const rate of bare.rates) positive(rate, `${framework} bare rate`)
      expect(rows.map((r) => [r.limiter, r.load])).to.have.deep.members(EXPECTED_ROWS[framework] as string[][])
      for (const row of rows) {
        const what = `${framework} ${row.limiter} ${row.load}`
        expect(row.ratios, what).to.have.length(1)
        for (const ratio of [...row.ratios, row.median, row.min, row.max, row.medianRate]) positive(ratio, what)
        if (row.limiter.startsWith('fleetlimit')) expect(row.storeCallsPerRequest, what).to.be.a('number')
        // Every response had its load's status: 200 admitted, 429 denied.
        expect(row.unexpected, what).to.equal(0)
      }
    }
    expect(result.markdown).to.include('### Koa')
    expect(result.markdown.match(/\| best in-process peer \|/g), 'an in-memory table per framework').to.have.length(3)
    expect(result.charts?.ratios).to.match(/^<svg[\s\S]*<\/svg>\s*$/)
  })

  it('decisions: every limiter at 1 and 100 in flight, and the server ceiling', async function () {
    this.timeout(30_000)
    const result = await decisions({ warmMs: 50, durationMs: 150, benchmarkRequests: [2_000, 8_000] })
    const { rows, benchmark } = result.data as { rows: DecisionsRow[]; benchmark: BenchmarkRow[] }
    const limiters = [...new Set(rows.map((r) => `${r.limiter} (${r.load})`))]
    expect(limiters).to.include.members([
      ...PEERS.map((peer) => `${peer.id} (admitted)`),
      'fleetlimit, store only (admitted)',
      'fleetlimit, store only, node-redis (admitted)',
      'fleetlimit, store only, GLIDE (admitted)',
      'fleetlimit, the store alone (admitted)',
      'fleetlimit, deny cache (default local tier) (admitted)',
      'fleetlimit, leases on a hot key (admitted)',
      'fleetlimit, deny cache (denied)',
    ])
    expect(rows).to.have.length(limiters.length * 2)
    for (const row of rows) {
      positive(row.perSecond, `${row.limiter} ${row.inFlight} in flight`)
      expect([1, 100]).to.include(row.inFlight)
      // The admitted loads admit everything; the denied one admits nothing after its warm-up.
      expect(row.admitted, row.limiter).to.equal(row.load === 'admitted' ? row.decisions : 0)
    }
    expect(benchmark.map((b) => b.pipeline)).to.deep.equal([1, 16])
    for (const b of benchmark) positive(b.perSecond, `redis-benchmark -P ${b.pipeline}`)
  })
})
