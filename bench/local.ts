// Local part: store calls per request with the deny cache and with leases, on one hot key shared by four
// processes, and the most admissions in any window divided by the limit; then what reset messages cost a
// process with many cached denials (local-messages.ts).
import type { LocalOptions } from '@fleetlimit/core'
import { type FleetReport, runFleet } from '@fleetlimit/test-kit/fleet'
import { maxInWindow } from '@fleetlimit/test-kit/recording-store'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { localMessages, type MessageRow } from './local-messages.js'
import type { PartResult } from './run.js'

interface Load {
  readonly name: string
  readonly limit: number
  readonly windowMs: number
  /** Calls per second per process, four processes. */
  readonly perProcess: number
  readonly local: LocalOptions | false
}

const loads: Load[] = [
  { name: '10x the limit, no local tier', limit: 100, windowMs: 1_000, perProcess: 250, local: false },
  { name: '10x the limit, deny cache', limit: 100, windowMs: 1_000, perProcess: 250, local: { denyCache: true } },
  {
    name: '10x the limit, deny cache + auto leases',
    limit: 100,
    windowMs: 1_000,
    perProcess: 250,
    local: { lease: 'auto' },
  },
  {
    name: 'half of 10 000/s, deny cache + auto leases',
    limit: 10_000,
    windowMs: 1_000,
    perProcess: 1_250,
    local: { lease: 'auto' },
  },
]

export async function local({ durationMs = 5_000, cached = 10_000, messages = 10_000 } = {}): Promise<PartResult> {
  const server = await startRedisServer()
  const results: { load: Load; report: FleetReport }[] = []
  let handling: MessageRow[]
  try {
    for (const load of loads) {
      const report = await runFleet({
        redisUrl: server.url,
        limit: load.limit,
        windowMs: load.windowMs,
        durationMs,
        skewsMs: [0, 0, 0, 0],
        local: load.local,
        pace: load.perProcess,
      })
      results.push({ load, report })
    }
    handling = await localMessages(server.url, { cached, messages })
  } finally {
    await server.stop()
  }
  const rows = results.map(({ load, report }) => {
    const admitted = report.admissions.length
    // Returning unused leased units is a round trip too, if off the request path: it counts.
    const storeCalls = report.stats.storeCalls + report.stats.releaseCalls
    const windows = durationMs / load.windowMs
    return {
      load: load.name,
      requests: report.calls,
      errors: report.errors,
      admitted,
      storeCallsPerRequest: storeCalls / report.calls,
      storeCallsPerAdmitted: storeCalls / admitted,
      admittedOfLimit: admitted / (load.limit * windows),
      admittedOfSent: admitted / report.calls,
      maxInWindowOfLimit: report.maxInWindow / load.limit,
      maxInWindowOfLimit5msShort: maxInWindow(report.admissions, load.windowMs - 5) / load.limit,
      localHits: report.stats.localHits,
      leasedUnits: report.stats.leasedUnits,
      returnedUnits: report.stats.returnedUnits,
    }
  })
  const f = (n: number, digits = 3) => n.toFixed(digits)
  const markdown = [
    `Four processes on one key of one Redis for ${durationMs / 1000} s, each sending at a steady rate.`,
    '',
    '| load | requests | admitted | store calls / request | store calls / admitted | admitted / limit | admitted / sent | most in any window / limit |',
    '|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.load} | ${r.requests} | ${r.admitted} | ${f(r.storeCallsPerRequest)} | ${f(r.storeCallsPerAdmitted)} | ` +
        `${f(r.admittedOfLimit)} | ${f(r.admittedOfSent)} | ${f(r.maxInWindowOfLimit, 2)} |`,
    ),
    '',
    'Admission times: the Redis server clock for admissions the store made, and the wall clock of the process',
    '(the same machine) for admissions made from a lease.',
    '',
    `Reset messages: one process holds ${cached} cached denials (one policy, or two decided together); another`,
    `client publishes ${messages} messages on \`{prefix}:changed\`, each naming one denied tenant's key.`,
    '',
    '| policies | cached denials | messages | all handled after (ms) | event loop blocked at most (ms) |',
    '|---|---|---|---|---|',
    ...handling.map(
      (r) => `| ${r.policies} | ${r.cached} | ${r.messages} | ${f(r.handledMs, 0)} | ${f(r.maxBlockedMs, 1)} |`,
    ),
    '',
  ].join('\n')
  return {
    title: 'Local tier: store calls per request on a hot key',
    markdown,
    data: { loads: rows, messages: handling },
  }
}
