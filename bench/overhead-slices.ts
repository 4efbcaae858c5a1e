// The overhead part's measurement for one framework. The machine's speed drifts by up to 2x within a minute,
// so slices alternate between the bare server and the limited ones, and each limited slice is divided by the
// bare rate at its own moment (interpolated between the bare slices around it): ratios, never absolute rates.
import type { LimiterStats } from '@fleetlimit/core'
import type { LoadGenerator } from './loadgen.js'
import { type Cell, type LimiterName, LOADS, type LoadName } from './overhead-servers.js'
import type { BenchServer, Framework } from './servers.js'

export interface SliceSettings {
  /** Measured slices per limiter and load. */
  readonly rounds: number
  readonly sliceMs: number
  /** A bare slice after every this many limited slices (and before the first). */
  readonly bareEvery: number
  /** Unmeasured load on every server first: JIT warm-up, and the denied loads' keys exhausted. */
  readonly warmMs: number
  /** autocannon connections (pipelining 1). */
  readonly connections: number
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
}

export interface OverheadFramework {
  readonly framework: Framework
  readonly bare: { readonly rates: number[]; readonly median: number; readonly min: number; readonly max: number }
  readonly rows: OverheadRow[]
}

interface Slice {
  /** Index into the cells, or -1 for the bare server. */
  readonly cell: number
  /** Midpoint, in ms of this process's clock. */
  readonly at: number
  readonly rate: number
  readonly responses: number
  readonly unexpected: number
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length / 2
  return sorted.length % 2 === 1
    ? (sorted[Math.floor(mid)] as number)
    : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2
}

const spread = (values: readonly number[]) => ({
  median: median(values),
  min: Math.min(...values),
  max: Math.max(...values),
})

export async function measureFramework(
  framework: Framework,
  bare: BenchServer,
  cells: readonly Cell[],
  loadgen: LoadGenerator,
  settings: SliceSettings,
): Promise<OverheadFramework> {
  const run = async (cell: number, durationMs: number): Promise<Slice> => {
    const own = cells[cell]
    const load = own && LOADS[own.load]
    const started = performance.now()
    const result = await loadgen.run({
      url: (own?.server ?? bare).url,
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
      ...spread(ratios),
      medianRate: median(own.map((s) => s.rate)),
      unexpected: own.reduce((sum, s) => sum + s.unexpected, 0),
      ...(before && after && storeFigures(before, after, responses)),
    }
  })
  const rates = bareSlices.map((s) => s.rate)
  return { framework, bare: { rates, ...spread(rates) }, rows }
}

/** fleetlimit's store calls per response and counters over the measured slices: the differences of its stats. */
function storeFigures(before: LimiterStats, after: LimiterStats, responses: number) {
  return {
    storeCallsPerRequest: (after.storeCalls + after.releaseCalls - before.storeCalls - before.releaseCalls) / responses,
    stats: Object.fromEntries(
      Object.entries(after).map(([name, value]) => [name, value - before[name as keyof LimiterStats]]),
    ),
  }
}
