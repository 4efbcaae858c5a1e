// Outbound part, priorities: one upstream quota shared by two classes. Worker processes keep the batch class
// saturating it; interactive calls arrive now and then from two of them. One row for fleetlimit's priority classes
// (interactive 70 %, batch 30 %), one for Bottleneck's per-process `priority` on its Redis clustering.
import { fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import type { InteractiveCall, PrioritiesWorkerConfig, PrioritiesWorkerReport } from './outbound-priorities-worker.js'
import { reply, runWorkers } from './worker-fleet.js'

export interface PrioritiesScenario {
  readonly workers: number
  /** Batch calls each worker keeps going at once. */
  readonly batchLoops: number
  /** Workers that also start an interactive call every `interactiveEveryMs`, staggered. */
  readonly interactiveWorkers: number
  readonly interactiveEveryMs: number
  /** The upstream's quota per window, and the limiter's. */
  readonly quota: number
  readonly windowMs: number
  readonly durationMs: number
}

export const PRIORITIES_SCENARIO: PrioritiesScenario = {
  workers: 4,
  batchLoops: 4,
  interactiveWorkers: 2,
  interactiveEveryMs: 250,
  quota: 20,
  windowMs: 1_000,
  durationMs: 8_000,
}

export interface PrioritiesRow {
  readonly id: 'fleetlimit' | 'bottleneck'
  readonly name: string
  readonly interactiveCalls: number
  /** Interactive calls not admitted by the end. */
  readonly interactiveUnadmitted: number
  readonly waitP50Ms: number
  readonly waitP99Ms: number
  readonly waitMaxMs: number
  /** Batch's share of the upstream's arrivals, overall, and while an interactive call waited for admission. */
  readonly batchShare: number
  readonly batchShareWhileWaiting: number
  readonly arrivedWhileWaiting: number
  readonly requests: number
  readonly refused: number
  readonly served: number
  /** The quota of every window of the run. */
  readonly quotaTotal: number
  readonly errors: Record<string, number>
}

/** An upstream of `quota` per fixed window from the start, which records each arrival's time and class. */
async function startUpstream(quota: number, windowMs: number) {
  let startAt = Number.POSITIVE_INFINITY
  let endAt = Number.POSITIVE_INFINITY
  const used = new Map<number, number>()
  const arrivals: { at: number; batch: boolean; allowed: boolean }[] = []
  const server = createServer((req, res) => {
    req.resume()
    const now = Date.now()
    if (now < startAt || now >= endAt) {
      res.writeHead(503, { 'retry-after': '1' }).end()
      return
    }
    const index = Math.floor((now - startAt) / windowMs)
    const count = (used.get(index) ?? 0) + 1
    used.set(index, count)
    const allowed = count <= quota
    arrivals.push({ at: now, batch: req.headers['x-class'] === 'batch', allowed })
    const resetS = Math.ceil((startAt + (index + 1) * windowMs - now) / 1000)
    res.writeHead(allowed ? 200 : 429, allowed ? {} : { 'retry-after': String(resetS) }).end(allowed ? 'ok' : 'no')
  })
  server.keepAliveTimeout = 60_000
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    arrivals,
    start(at: number, durationMs: number) {
      startAt = at
      endAt = at + durationMs
    },
    async close() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

const quantile = (sorted: readonly number[], q: number) =>
  sorted.length === 0 ? Number.NaN : (sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] as number)

async function measure(
  id: PrioritiesRow['id'],
  name: string,
  redisUrl: string,
  scenario: PrioritiesScenario,
): Promise<PrioritiesRow> {
  const { workers: count, batchLoops, interactiveWorkers, interactiveEveryMs, quota, windowMs, durationMs } = scenario
  const upstream = await startUpstream(quota, windowMs)
  const key = `priorities-${id}-${randomBytes(4).toString('hex')}`
  const workerPath = fileURLToPath(new URL('./outbound-priorities-worker.ts', import.meta.url))
  const workers = Array.from({ length: count }, () =>
    fork(workerPath, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  )
  try {
    const ready = workers.map((child) => reply<unknown>(child))
    workers.forEach((child, i) => {
      const interactive = i < interactiveWorkers
      const config: PrioritiesWorkerConfig = {
        redisUrl,
        key,
        limiter: id,
        limit: quota,
        windowMs,
        upstreamUrl: upstream.url,
        batchLoops,
        interactiveEveryMs: interactive ? interactiveEveryMs : 0,
        interactiveOffsetMs: interactive ? Math.round(((i + 0.5) * interactiveEveryMs) / interactiveWorkers) : 0,
      }
      child.send(config)
    })
    await Promise.all(ready)
    const { reports, errors } = await runWorkers<PrioritiesWorkerReport>(workers, (startAt) => {
      upstream.start(startAt, durationMs)
      return { startAt, durationMs }
    })
    const calls: InteractiveCall[] = reports.flatMap((r) => r.interactive)
    const admitted = calls.filter((c) => c.admittedAt > 0)
    const waits = admitted.map((c) => c.admittedAt - c.startedAt).sort((a, b) => a - b)
    // Arrivals while some interactive call waited: between its start and its admission.
    const waiting = (at: number) => admitted.some((c) => c.startedAt <= at && at <= c.admittedAt)
    const { arrivals } = upstream
    const during = arrivals.filter((a) => waiting(a.at))
    const served = arrivals.filter((a) => a.allowed).length
    return {
      id,
      name,
      interactiveCalls: calls.length,
      interactiveUnadmitted: calls.length - admitted.length,
      waitP50Ms: quantile(waits, 0.5),
      waitP99Ms: quantile(waits, 0.99),
      waitMaxMs: waits.at(-1) ?? Number.NaN,
      batchShare: arrivals.filter((a) => a.batch).length / arrivals.length,
      batchShareWhileWaiting: during.length === 0 ? 0 : during.filter((a) => a.batch).length / during.length,
      arrivedWhileWaiting: during.length,
      requests: arrivals.length,
      refused: arrivals.length - served,
      served,
      quotaTotal: quota * Math.ceil(durationMs / windowMs),
      errors,
    }
  } finally {
    for (const child of workers) if (child.exitCode === null) child.kill()
    await upstream.close()
  }
}

/** The priorities rows, on the Redis at `redisUrl`, and their section of the outbound part's page. */
export async function outboundPriorities(redisUrl: string, scenario: PrioritiesScenario = PRIORITIES_SCENARIO) {
  const rows = [
    await measure('fleetlimit', 'fleetlimit, `priorities` (interactive 0.7, batch 0.3)', redisUrl, scenario),
    await measure('bottleneck', 'Bottleneck 2.19.5 (Redis clustering, `priority` 0 and 9)', redisUrl, scenario),
  ]
  const { workers, batchLoops, interactiveWorkers, interactiveEveryMs, quota, windowMs, durationMs } = scenario
  const ms = (value: number) => `${Math.round(value)} ms (${(value / windowMs).toFixed(2)} windows)`
  const percent = (ratio: number) => `${(ratio * 100).toFixed(1)} %`
  const errorsOf = (row: PrioritiesRow) =>
    Object.entries(row.errors)
      .map(([message, times]) => `${times} × ${message.replaceAll('|', '\\|').replaceAll('\n', ' ')}`)
      .join('; ') || 'none'
  const markdown = [
    '## Priorities: two classes sharing one quota',
    '',
    `${workers} worker processes share an upstream quota of ${quota} requests per ${windowMs / 1000} s window (fixed`,
    `windows from the start; the limiter is configured at the quota, \`limit: ${quota}, window: ${windowMs}\`). Each`,
    `keeps ${batchLoops} batch calls going (saturating the quota); ${interactiveWorkers} of them also start an interactive`,
    `call every ${interactiveEveryMs} ms, staggered, for ${durationMs / 1000} s (none in the last window). A wait is from an interactive call's start to`,
    "its admission (when the limiter calls fetch). Batch's share is of the requests that reached the upstream: overall,",
    'and of those that arrived while an interactive call waited for admission. fleetlimit reserves 30 % of the',
    "quota for batch; Bottleneck's `priority` orders each process's own queue.",
    '',
    '| limiter | interactive calls | wait p50 | wait p99 | wait max | batch share, overall | batch share while interactive waited | requests | 429s | served | errors |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${r.interactiveCalls}${r.interactiveUnadmitted > 0 ? ` (${r.interactiveUnadmitted} not admitted)` : ''} | ` +
        `${ms(r.waitP50Ms)} | **${ms(r.waitP99Ms)}** | ${ms(r.waitMaxMs)} | **${percent(r.batchShare)}** | ` +
        `${percent(r.batchShareWhileWaiting)} of ${r.arrivedWhileWaiting} | ${r.requests} | ${r.refused} | ` +
        `${r.served}/${r.quotaTotal} | ${errorsOf(r)} |`,
    ),
    '',
  ].join('\n')
  return { rows, markdown, scenario }
}
