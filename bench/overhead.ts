// Overhead part: HTTP throughput of Express, Fastify and Koa with each rate limiter, as a ratio to the same
// framework bare. overhead-servers.ts starts the servers, overhead-slices.ts measures them with autocannon
// (loadgen.ts) and overhead-report.ts writes the results.
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { startLoadGenerator } from './loadgen.js'
import { overheadChart, overheadMarkdown } from './overhead-report.js'
import { type Cell, closeCells, type LimiterName, startCells } from './overhead-servers.js'
import { measureFramework, type OverheadFramework, type SliceSettings } from './overhead-slices.js'
import type { PartResult } from './run.js'
import { type Framework, startServer } from './servers.js'

export interface OverheadOptions extends Partial<SliceSettings> {
  readonly frameworks?: readonly Framework[]
  /** The limiters measured, all of them if absent. */
  readonly only?: (limiter: LimiterName) => boolean
}

// 40 rows in all: 6 slices of 1.3 s each, with the bare slices between them, take about 9 minutes.
const FULL: SliceSettings = { rounds: 6, sliceMs: 1_300, bareEvery: 2, warmMs: 500, connections: 10 }
const FRAMEWORKS: readonly Framework[] = ['Express', 'Fastify', 'Koa']

export async function overhead(options: OverheadOptions = {}): Promise<PartResult> {
  const { frameworks = FRAMEWORKS, only, ...sizes } = options
  const settings: SliceSettings = { ...FULL, ...sizes }
  const started = performance.now()
  const redis = await startRedisServer()
  const loadgen = await startLoadGenerator()
  const results: OverheadFramework[] = []
  try {
    for (const framework of frameworks) {
      const bare = await startServer(framework)
      let cells: Cell[] = []
      try {
        cells = await startCells(framework, redis.url, only)
        results.push(await measureFramework(framework, bare, cells, loadgen, settings))
      } finally {
        await bare.close()
        await closeCells(cells)
      }
    }
  } finally {
    await loadgen.close()
    await redis.stop()
  }
  const seconds = (performance.now() - started) / 1000
  return {
    title: 'Overhead: HTTP throughput with each rate limiter, relative to the bare framework',
    markdown: overheadMarkdown(results, settings, seconds),
    data: { settings: { ...settings, frameworks }, seconds, frameworks: results },
    charts: { ratios: overheadChart(results) },
  }
}
