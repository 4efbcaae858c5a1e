// In-flight part: the fleet (4 processes × 50 calls of 20-200 ms, at most 5 in flight and 100 started
// per 5 s, fleet-wide) with each Redis-backed in-flight limiter, measured by the upstream that the calls reach.
import { startRedisCluster } from '@fleetlimit/test-kit/redis-cluster'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { Redis } from 'ioredis'
import {
  IN_FLIGHT_SCENARIO,
  type InFlightResult,
  type InFlightScenario,
  measureInFlight,
  perfectScheduleMs,
  seededHolds,
} from './in-flight-fleet.js'
import { NO_RATE } from './in-flight-fleetlimit.js'
import { IN_FLIGHT_PEERS, type InFlightPeer } from './in-flight-peers.js'
import type { PartResult } from './run.js'

export interface InFlightRow extends InFlightResult {
  /** Completed tasks per second of wall time. */
  readonly throughput: number
  /** The in-flight limit's ideal (every slot busy at every moment: the sum of the holds / concurrency) / wall. */
  readonly ofIdeal: number
  /** A perfect limiter's schedule under both limits (perfectScheduleMs) / wall. */
  readonly ofPerfect: number
}

export interface InFlightOptions {
  readonly scenario?: InFlightScenario
  /** Default: every peer of IN_FLIGHT_PEERS. */
  readonly peers?: readonly InFlightPeer[]
  /** Also runs fleetlimit's in-flight-only row on a 3-master Cluster. Default true. */
  readonly cluster?: boolean
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`
const percent = (ratio: number) => `${(ratio * 100).toFixed(0)} %`

/** One row per run: the upstream's counts, and throughput beside the ideal and the perfect schedule. */
function rowOf(result: InFlightResult, idealMs: number, perfectMs: number): InFlightRow {
  return {
    ...result,
    throughput: (result.completed * 1000) / result.wallMs,
    ofIdeal: idealMs / result.wallMs,
    ofPerfect: perfectMs / result.wallMs,
  }
}

export async function inFlight({
  scenario = IN_FLIGHT_SCENARIO,
  peers = IN_FLIGHT_PEERS,
  cluster: onCluster = true,
}: InFlightOptions = {}): Promise<PartResult> {
  const holds = seededHolds(scenario.seed, scenario.workers * scenario.tasksPerWorker)
  const idealMs = holds.reduce((sum, hold) => sum + hold, 0) / scenario.concurrency
  const perfectMs = perfectScheduleMs(holds, scenario)
  // The same fleet with the in-flight limit alone: the ideal (every slot busy at every moment) is then reachable.
  const alone: InFlightScenario = { ...scenario, limit: NO_RATE }
  const alonePerfectMs = perfectScheduleMs(holds, alone)
  const server = await startRedisServer()
  const redis = new Redis(server.url)
  const rows: InFlightRow[] = []
  const aloneRows: InFlightRow[] = []
  try {
    for (const peer of peers) {
      await redis.flushall()
      rows.push(rowOf(await measureInFlight(peer, server.url, scenario), idealMs, perfectMs))
    }
    for (const peer of peers.filter((p) => p.id !== 'bottleneck')) {
      await redis.flushall()
      aloneRows.push(rowOf(await measureInFlight(peer, server.url, alone), idealMs, alonePerfectMs))
    }
  } finally {
    redis.disconnect()
    await server.stop()
  }
  const fleetlimit = peers.find((p) => p.id === 'fleetlimit')
  if (fleetlimit && onCluster) {
    const cluster = await startRedisCluster({ replicasPerMaster: 0 })
    try {
      const seeds = cluster.startupNodes.map(({ host, port }) => `${host}:${port}`).join(',')
      const peer = { ...fleetlimit, name: 'fleetlimit (3-master Cluster)' }
      aloneRows.push(rowOf(await measureInFlight(peer, `cluster:${seeds}`, alone), idealMs, alonePerfectMs))
    } finally {
      await cluster.stop()
    }
  }

  const { workers, tasksPerWorker, concurrency, limit, windowMs } = scenario
  const window = seconds(windowMs).replace('.00', '')
  const errorsOf = (row: InFlightRow) =>
    Object.entries(row.errors)
      .map(([message, times]) => `${times} × ${message.replaceAll('|', '\\|').replaceAll('\n', ' ')}`)
      .join('; ') || 'none'
  const markdown = [
    `${workers} worker processes × ${tasksPerWorker} tasks each, all queued at once; each task is one call to a stub`,
    `upstream that holds it for 20-200 ms (a seeded sequence: every limiter gets the same work, ${holds.length} calls,`,
    `${holds.reduce((a, b) => a + b, 0)} ms of holds in all). Fleet limits: **${concurrency} in flight** and **${limit} calls`,
    `started per ${window}** (sliding), one key, one Redis. The upstream enforces both exactly by its own clock,`,
    'answering 429 with Retry-After; a task answered 429 waits that long and calls again through its limiter',
    `(up to ${scenario.maxAttempts} calls). "Most in flight" and "most in any ${window}" are the upstream's counts of what`,
    'arrived, refused calls included: above the limit means the limiter let more through than it was set to.',
    '',
    `| limiter | enforces | most in flight (limit ${concurrency}) | most in any ${window} (limit ${limit}) | 429s | completed | tasks/s | wall | % of ideal | % of perfect | errors |`,
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${r.enforces} | **${r.stats.maxInFlight}** | **${r.stats.maxRequestsInWindow}** | ${r.stats.rejected} | ` +
        `${r.completed}/${r.tasks} | ${r.throughput.toFixed(1)} | ${seconds(r.wallMs)} | ${percent(r.ofIdeal)} | ` +
        `${percent(r.ofPerfect)} | ${errorsOf(r)} |`,
    ),
    '',
    `Ideal: ${seconds(idealMs)}, every one of the ${concurrency} slots busy at every moment (the sum of the holds / ${concurrency}),`,
    `which the rate limit alone already rules out. Perfect: ${seconds(perfectMs)}, each call started at the first moment`,
    `a slot is free and fewer than ${limit} calls started in the ${window} before, in the order the queues interleave,`,
    'with no time for the network or Redis. Wall time runs from the common start to the last task’s end.',
    '',
    `The same fleet with the in-flight limit alone (${concurrency} in flight, no rate), where the ideal is reachable:`,
    '',
    `| limiter | most in flight (limit ${concurrency}) | 429s | completed | tasks/s | wall | % of ideal | % of perfect | errors |`,
    '|---|---|---|---|---|---|---|---|---|',
    ...aloneRows.map(
      (r) =>
        `| ${r.name} | **${r.stats.maxInFlight}** | ${r.stats.rejected} | ${r.completed}/${r.tasks} | ` +
        `${r.throughput.toFixed(1)} | ${seconds(r.wallMs)} | ${percent(r.ofIdeal)} | ${percent(r.ofPerfect)} | ${errorsOf(r)} |`,
    ),
    '',
    `Perfect here: ${seconds(alonePerfectMs)}, each call started the moment a slot is free (the last calls leave slots`,
    'idle that no schedule can fill).',
    '',
  ].join('\n')
  return {
    title: 'In flight: at most n calls at once, fleet-wide, measured by the upstream',
    markdown,
    data: { scenario, holdsMs: holds.reduce((a, b) => a + b, 0), idealMs, perfectMs, alonePerfectMs, rows, aloneRows },
  }
}
