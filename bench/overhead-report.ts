// The overhead part's results as Markdown (how each ratio was measured, then a table per framework) and as
// one bar chart of every ratio with its spread over the slices.
import type { LoadName } from './overhead-servers.js'
import type { OverheadFramework, SliceSettings } from './overhead-slices.js'
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

export function overheadMarkdown(results: readonly OverheadFramework[], settings: SliceSettings, seconds: number) {
  return [
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
      '| limiter | load | limited / bare (median) | min–max | slices | limited responses/s (median) | store calls / request |',
      '|---|---|---|---|---|---|---|',
      ...r.rows.map(
        (row) =>
          `| ${limiterName(row.limiter)} | ${LOAD_TEXT[row.load]} | ${f2(row.median)} | ${f2(row.min)}–${f2(row.max)} | ` +
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
          .map((row) => ({ name: limiterName(row.limiter), value: row.median, low: row.min, high: row.max })),
      })),
    ),
    hLines: [{ y: 1, label: 'bare' }],
  })
}
