// The overhead part's results as Markdown (how each ratio was measured, then a table per framework) and as
// one bar chart of every ratio with its spread over the slices.
import { MEMORY_PEERS } from './memory-peers.js'
import { FLOOR } from './overhead-floor.js'
import { inMemory, type LimiterName, LOCAL_TIER, type LoadName, MEMORY_STORE } from './overhead-servers.js'
import type { OverheadFramework, OverheadRow, SliceSettings } from './overhead-slices.js'
import { limiterName } from './peers.js'
import { barChart } from './svg.js'

const LOAD_TEXT: Readonly<Record<LoadName, string>> = {
  admitted: 'all admitted (1 key)',
  denied: 'all denied (1 key, exhausted)',
  'hot tenants': '4 hot tenants',
  'cold keys': '5 000 cold keys',
}

const f2 = (n: number) => n.toFixed(2)
const rate = (n: number) => Math.round(n).toLocaleString('en')
const nameOf = (limiter: LimiterName) => MEMORY_PEERS.find((peer) => peer.id === limiter)?.name ?? limiterName(limiter)

/**
 * Per load, the in-process peer with the highest median beside fleetlimit on its memory store and on Redis with
 * the local tier (the one key of these loads is a hot tenant); none when the run had no such rows.
 */
function inMemoryTable(rows: readonly OverheadRow[]): string[] {
  const lines: string[] = []
  for (const load of ['admitted', 'denied'] as const) {
    const peers = rows.filter(
      (row) => row.load === load && inMemory(row.limiter) && row.limiter !== MEMORY_STORE && row.limiter !== FLOOR,
    )
    const best = peers.reduce<OverheadRow | undefined>((b, row) => (b && b.median >= row.median ? b : row), undefined)
    if (!best) continue
    const ours = (limiter: LimiterName) => {
      const row = rows.find((r) => r.load === load && r.limiter === limiter)
      return row ? `${f2(row.median)} (${f2(row.median / best.median)})` : ''
    }
    lines.push(
      `| ${LOAD_TEXT[load]} | ${nameOf(best.limiter)} | ${f2(best.median)} | ${ours(MEMORY_STORE)} | ${ours(LOCAL_TIER)} | ${ours(FLOOR)} |`,
    )
  }
  if (lines.length === 0) return []
  return [
    'In memory: limited / bare (median), and in brackets over the best in-process peer. The floor is a middleware',
    'that only counts in a Map and sends the same headers and answers as fleetlimit (overhead-floor.ts).',
    '',
    '| load | best in-process peer | its ratio | fleetlimit, memory store | fleetlimit on Redis, local tier | floor |',
    '|---|---|---|---|---|---|',
    ...lines,
    '',
  ]
}

export function overheadMarkdown(results: readonly OverheadFramework[], settings: SliceSettings, seconds: number) {
  return [
    `HTTP responses per second of each framework with a limiter, divided by the same framework bare (a handler`,
    `answering \`{"ok":true}\`), per slice of ${settings.sliceMs / 1000} s. autocannon (${settings.connections} connections,`,
    `no pipelining) runs in a child process; the servers run in the bench process, one Node process serving as`,
    `in production; every Redis limiter uses its own ioredis connection to one redis-server, and every in-memory one`,
    `(the peers' memory stores, fleetlimit's memory store with its default local tier) its own store. On a two-core machine the`,
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
      ...inMemoryTable(r.rows),
      '| limiter | load | limited / bare (median) | min–max | slices | limited responses/s (median) | store calls / request |',
      '|---|---|---|---|---|---|---|',
      ...r.rows.map(
        (row) =>
          `| ${nameOf(row.limiter)} | ${LOAD_TEXT[row.load]} | ${f2(row.median)} | ${f2(row.min)}–${f2(row.max)} | ` +
          `${row.ratios.length} | ${rate(row.medianRate)}${row.unexpected > 0 ? ` (${row.unexpected} unexpected)` : ''} | ` +
          `${row.storeCallsPerRequest === undefined ? '' : row.storeCallsPerRequest.toFixed(3)} |`,
      ),
      '',
    ]),
  ].join('\n')
}

export function overheadChart(results: readonly OverheadFramework[]): string {
  const loadsOf = (r: OverheadFramework) => [...new Set(r.rows.map((row) => row.load))]
  return barChart({
    title: 'HTTP throughput with a rate limiter, relative to the bare framework',
    yLabel: 'limited / bare (median, min–max)',
    groups: results.flatMap((r) =>
      loadsOf(r).map((load) => ({
        name: `${r.framework} ${load}`,
        bars: r.rows
          .filter((row) => row.load === load)
          .map((row) => ({ name: nameOf(row.limiter), value: row.median, low: row.min, high: row.max })),
      })),
    ),
    hLines: [{ y: 1, label: 'bare' }],
  })
}
