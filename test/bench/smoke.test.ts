// The bench parts at a tiny size: each runs to the end and returns data of the shape its results are written
// from. Nothing is written to bench/results, and no figure is checked: only that it is there and finite.
import { createRateLimiter, memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'
import { type AccuracyRow, accuracy } from '../../bench/accuracy.js'
import { callPath } from '../../bench/call-path.js'
import { failure } from '../../bench/failure.js'
import { handover } from '../../bench/handover.js'
import { type InProcessRow, inProcess } from '../../bench/in-process.js'
import { LIMITERS } from '../../bench/limiter-servers.js'
import { local } from '../../bench/local.js'
import { memory } from '../../bench/memory.js'
import { callsAllowed, OUTBOUND_SCENARIO, type OutboundRow, outbound } from '../../bench/outbound.js'
import { PRIORITIES_SCENARIO, type PrioritiesRow } from '../../bench/outbound-priorities.js'
import { TOKEN_SCENARIO, type TokenRow } from '../../bench/outbound-tokens.js'
import { PEERS } from '../../bench/peers.js'
import { redisCost } from '../../bench/redis-cost.js'
import { slidingLogScript } from '../../packages/core/src/store/scripts.generated.js'

const expectFinite = (value: unknown, what: string) =>
  expect(Number.isFinite(value), `${what}: ${value}`).to.equal(true)

function expectRows(rows: readonly AccuracyRow[], scenario: string) {
  expect(rows.map((r) => r.limiter)).to.deep.equal(LIMITERS.map((l) => l.id))
  for (const row of rows) {
    for (const field of [
      'sent',
      'admitted',
      'maxInWindow',
      'ratio',
      'roundTripLowerBound',
      'maxInWindowHandler',
    ] as const)
      expectFinite(row[field], `${scenario} ${row.limiter} ${field}`)
    expect(row.sent, `${scenario} ${row.limiter}`).to.be.greaterThan(0)
    expect(row.basis).to.be.a('string').and.not.equal('')
  }
}

describe('bench parts at a tiny size', () => {
  it('call-path: the functions of a memory consume, by file', async () => {
    const path = await callPath(createRateLimiter({ store: memoryStore(), limit: 1e9, window: '1h' }))
    expect(path.files.get('limiter/decide.ts')).to.include('decide')
    expect(path.files.get('store/memory/decisions.ts')).to.deep.equal(['decideLog'])
    expect(path.functions).to.equal([...path.files.values()].reduce((n, fns) => n + fns.length, 0))
  })

  it('accuracy: a row per limiter in both scenarios, and the admissions chart', async function () {
    this.timeout(50_000)
    const result = await accuracy({ scale: 0.05, windowMs: 400 })
    const data = result.data as { limit: number; windowMs: number; burst: AccuracyRow[]; fleet: AccuracyRow[] }
    expect(data).to.include({ limit: 100, windowMs: 400 })
    expectRows(data.burst, 'burst')
    expectRows(data.fleet, 'fleet')
    expect(result.charts?.admissions).to.match(/^<svg [\s\S]*<\/svg>\n$/)
    for (const { name } of LIMITERS) expect(result.markdown).to.include(name)
  })

  it('memory: our algorithms and every peer at a limit of 100', async function () {
    this.timeout(30_000)
    const { data } = await memory({ limits: [100] })
    const { rows, peers, admission } = data as {
      rows: { limit: number; slidingLogBytes: number; bucketedBytes: number }[]
      peers: { limiter: string; name: string; limit: number; keys: string[]; bytes: number; perAdmitted: number }[]
      admission: { buckets: number; ratio: number }[]
    }
    expect(rows.map((r) => r.limit)).to.deep.equal([100])
    for (const row of rows) for (const value of Object.values(row)) expectFinite(value, 'rows')
    expect(peers.map((p) => p.limiter)).to.deep.equal(PEERS.map((p) => p.id))
    for (const peer of peers) {
      expect(peer.limit).to.equal(100)
      expect(peer.keys, peer.name).to.not.be.empty
      expect(peer.bytes, peer.name).to.be.greaterThan(0)
      expectFinite(peer.perAdmitted, peer.name)
    }
    expect(admission.map((a) => a.buckets)).to.deep.equal([60, 10])
    for (const a of admission) expectFinite(a.ratio, 'admission')
  })

  it('local: a row per load, and reset messages handled with one policy and with two', async function () {
    this.timeout(30_000)
    const { data } = await local({ durationMs: 150, cached: 100, messages: 100 })
    const { loads, messages } = data as { loads: Record<string, unknown>[]; messages: Record<string, unknown>[] }
    expect(loads).to.have.length(4)
    for (const row of loads) {
      expect(row.load).to.be.a('string')
      for (const [name, value] of Object.entries(row)) if (name !== 'load') expectFinite(value, `${row.load} ${name}`)
    }
    expect(messages.map((row) => [row.policies, row.cached, row.messages])).to.deep.equal([
      [1, 100, 100],
      [2, 100, 100],
    ])
    for (const row of messages) for (const [name, value] of Object.entries(row)) expectFinite(value, name)
  })

  it('failure: every fault with each client, with their latencies and recovery', async function () {
    this.timeout(60_000)
    const clients = ['ioredis, README', 'GLIDE, defaults']
    const { data } = await failure({ warmupMs: 200, faultMs: 1_200, clients })
    const results = data as Record<string, unknown>[]
    expect(results.map((r) => `${r.kind} ${r.faultMs} ${r.client}`)).to.deep.equal([
      'kill 1200 ioredis, README',
      'freeze 1200 ioredis, README',
      'kill 4800 ioredis, README',
      'kill 1200 GLIDE, defaults',
      'freeze 1200 GLIDE, defaults',
      'kill 4800 GLIDE, defaults',
    ])
    for (const r of results) {
      for (const name of ['decisionsDuringFault', 'slowestMs', 'p50Ms', 'p99Ms', 'breakerOpenDecisionsPerSecond'])
        expectFinite(r[name], `${r.kind} ${name}`)
      expect(r.backToStoreMs === null || Number.isFinite(r.backToStoreMs), `${r.kind} backToStoreMs`).to.equal(true)
      expect(r.stats).to.be.an('object')
    }
  })

  it('redis-cost: the counter, the floor and ours timed in every scenario (ours alone and in runs), and the memory of a filled key', async function () {
    this.timeout(60_000)
    // The script as sent is also given as the baseline, to time the baseline's turns too.
    const { data } = await redisCost({
      requests: 2_000,
      rounds: 1,
      memoryLimits: [2_000],
      largeCalls: 20,
      baselineLua: slidingLogScript.lua,
    })
    const { rows, memory, large } = data as {
      rows: {
        scenario: string
        counterUs: number
        floorUs: number
        oursUs: number
        inRunsUs: number
        baselineUs: number
        baselineInRunsUs: number
        calendarUs: number
      }[]
      memory: { limit: number; bytes: number; bytesPerThousand: number; baselineBytes: number }[]
      large: { redisUs: number[]; memoryUs: { median: number; p99: number; max: number }[] }
    }
    expect(rows).to.have.length(3)
    for (const row of rows) {
      expect(row.counterUs, row.scenario).to.be.greaterThan(0)
      expect(row.floorUs, row.scenario).to.be.greaterThan(0)
      expect(row.oursUs, row.scenario).to.be.greaterThan(0)
      expect(row.inRunsUs, row.scenario).to.be.greaterThan(0)
      expect(row.baselineUs, row.scenario).to.be.greaterThan(0)
      expect(row.baselineInRunsUs, row.scenario).to.be.greaterThan(0)
      expect(row.calendarUs, row.scenario).to.be.greaterThan(0)
    }
    expect(memory.map((m) => m.limit)).to.deep.equal([2_000])
    expect(memory[0]?.baselineBytes, 'the same script fills a key to the same bytes').to.equal(memory[0]?.bytes)
    // One entry of 9 bytes per call, whatever its cost.
    expect(memory[0]?.bytes).to.be.greaterThan(2_000 * 9)
    expect(memory[0]?.bytesPerThousand).to.be.below(2_000)
    expect(large.redisUs).to.have.length(2)
    for (const us of large.redisUs) expect(us).to.be.greaterThan(0)
    expect(large.memoryUs).to.have.length(2)
    for (const { median, p99, max } of large.memoryUs) expect(0 < median && median <= p99 && p99 <= max).to.equal(true)
  })

  it('in-process: ours and both peers in each load and number in flight', async function () {
    this.timeout(30_000)
    const { data, markdown } = await inProcess({ rounds: 1, sliceMs: 20 })
    const rows = data as InProcessRow[]
    expect(rows.map((r) => `${r.load} ${r.inFlight} ${r.limiter}`)).to.deep.equal(
      ['admitted 1', 'admitted 100', 'denied 1', 'denied 100'].flatMap((cell) =>
        [
          'fleetlimit',
          'fleetlimit: the store alone',
          'rate-limiter-flexible',
          'express-rate-limit',
          'floor: counter',
          'floor: sliding log',
          'floor: refundable decision',
        ].map((limiter) => `${cell} ${limiter}`),
      ),
    )
    for (const row of rows) {
      expect(row.perSecond, `${row.load} ${row.inFlight} ${row.limiter}`).to.be.greaterThan(0)
      expect(row.rounds).to.have.length(1)
    }
    expect(markdown).to.include('| denied | 100 |')
  })

  it('handover: every round timed, and the commands per second while 4, 20 and 100 waiters wait', async function () {
    this.timeout(60_000)
    const { data } = await handover({ rounds: 10, waitMs: 200 })
    const { rounds, handoverMs, commandsPerSecondWhileWaiting } = data as {
      rounds: number
      handoverMs: { median: number; p99: number }
      commandsPerSecondWhileWaiting: { waiters: number; perSecond: number }[]
    }
    expect(rounds).to.equal(10)
    expect(handoverMs.median).to.be.a('number').and.not.NaN
    expect(commandsPerSecondWhileWaiting.map((l) => l.waiters)).to.deep.equal([4, 20, 100])
  })

  it('outbound: a row per adapt mode and Bottleneck, priorities beside Bottleneck, and a row per way to reserve tokens', async function () {
    this.timeout(120_000)
    const scenario = { ...OUTBOUND_SCENARIO, workers: 2, durationMs: 2_000, changeAtMs: 1_000 }
    const prioritiesScenario = { ...PRIORITIES_SCENARIO, workers: 2, batchLoops: 2, durationMs: 2_000 }
    const tokenScenario = { ...TOKEN_SCENARIO, workers: 2, concurrency: 2, durationMs: 1_500, warmUpMs: 500 }
    const { data, markdown } = await outbound(scenario, { priorities: prioritiesScenario, tokens: tokenScenario })
    const { rows, priorities, tokens } = data as {
      rows: OutboundRow[]
      priorities: { rows: PrioritiesRow[] }
      tokens: { rows: TokenRow[]; ideal: { order: string }[] }
    }
    expect(priorities.rows.map((r) => r.id)).to.deep.equal(['fleetlimit', 'bottleneck'])
    for (const row of priorities.rows) {
      // 2 interactive workers, one call every 250 ms each, in the first of the 2 windows.
      expect(row.interactiveCalls, row.name).to.equal(8)
      expect(row.quotaTotal, row.name).to.equal(40)
      expect(row.requests, row.name).to.equal(row.served + row.refused)
      for (const value of [row.waitP50Ms, row.waitP99Ms, row.batchShare]) expectFinite(value, row.name)
      expect(row.errors, row.name).to.deep.equal({})
    }
    expect(markdown).to.include('## Priorities: two classes sharing one quota')
    expect(rows.map((r) => r.id)).to.deep.equal(['headers', 'aimd', 'false', 'bottleneck'])
    for (const row of rows) {
      expect(row.quota, row.name).to.equal(30)
      expect(row.windows.map((w) => w.quota)).to.deep.equal([20, 10])
      expect(row.requests, row.name).to.equal(row.served + row.refused)
      expect(row.served, row.name).to.be.greaterThan(0)
      for (const value of [row.refusedShare, row.servedShare]) expectFinite(value, row.name)
      expect(row.errors, row.name).to.deep.equal({})
    }
    expect(markdown).to.include("fleetlimit, adapt: 'headers'")
    expect(tokens.rows.map((r) => r.id)).to.deep.equal([
      'worst',
      'bound',
      'estimate',
      'bottleneck',
      'ideal-fifo',
      'ideal-first-fit',
    ])
    expect(tokens.ideal.map((s) => s.order)).to.deep.equal(['fifo', 'first-fit', 'smallest-first'])
    for (const row of tokens.rows) {
      expect(row.requests, row.name).to.be.greaterThan(0)
      for (const value of [row.usedShare, row.peakShare, row.meanCost]) expectFinite(value, row.name)
      expect(row.errors, row.name).to.deep.equal({})
    }
    expect(markdown).to.include("cost: 'estimate'")
    // The requests-and-tokens table: the tokens quota drops (3,000 to 1,000 at 100 a call), the requests one stays.
    const { tokenRows } = data as { tokenRows: OutboundRow[] }
    expect(tokenRows.map((r) => r.id)).to.deep.equal(['tokens-headers', 'tokens-aimd', 'tokens-false'])
    for (const row of tokenRows) {
      expect(
        row.windows.map((w) => [w.quota, w.tokenQuota]),
        row.name,
      ).to.deep.equal([
        [20, 3_000],
        [20, 1_000],
      ])
      expect(callsAllowed(row, 100)).to.deep.equal([20, 10])
      expect(row.tokensServed, row.name).to.equal(row.served * 100)
      expect(row.requests, row.name).to.equal(row.served + row.refused)
      expect(row.served, row.name).to.be.greaterThan(0)
      expect(row.errors, row.name).to.deep.equal({})
    }
    expect(markdown).to.include('Requests and tokens')
  })
})
