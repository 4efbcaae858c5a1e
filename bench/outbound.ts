// Outbound part: a fleet of workers sharing one upstream. Worker processes each call one upstream through limitedFetch with a limiter
// configured 3x above the upstream's quota, which drops mid-run; the upstream counts what reaches it. One row per
// adapt mode, and Bottleneck's nearest equivalent on its Redis clustering. A second table: an LLM API's requests
// and tokens quotas, whose tokens quota drops mid-run, against a limiter of two policies.
import { fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { outboundPriorities, PRIORITIES_SCENARIO, type PrioritiesScenario } from './outbound-priorities.js'
import { outboundTokens, TOKEN_SCENARIO, type TokenScenario } from './outbound-tokens.js'
import { startQuotaUpstream, type UpstreamCounts } from './outbound-upstream.js'
import type { OutboundWorkerConfig, OutboundWorkerReport } from './outbound-worker.js'
import type { PartResult } from './run.js'
import { reply, runWorkers } from './worker-fleet.js'

export interface OutboundScenario {
  readonly workers: number
  /** Calls each worker keeps going at once (each loop calls again when its call ends). */
  readonly concurrency: number
  /** The limiter's configured limit per window. */
  readonly limit: number
  readonly windowMs: number
  /** The upstream's quota per window, before and after `changeAtMs`. */
  readonly quotas: readonly [number, number]
  readonly changeAtMs: number
  readonly durationMs: number
  /**
   * The second table's upstream: a requests quota that stays `quotas[0]`, and a tokens quota per window before and
   * after `changeAtMs`, each call costing `perCall`; the limiter's tokens policy is configured at `limit`.
   */
  readonly tokens: { readonly perCall: number; readonly quotas: readonly [number, number]; readonly limit: number }
}

export const OUTBOUND_SCENARIO: OutboundScenario = {
  workers: 4,
  concurrency: 1,
  limit: 60,
  windowMs: 1_000,
  quotas: [20, 10],
  changeAtMs: 4_000,
  durationMs: 8_000,
  // 20 requests a window bind first (2,000 tokens of 3,000), then 1,000 tokens (10 calls).
  tokens: { perCall: 100, quotas: [3_000, 1_000], limit: 9_000 },
}

interface Row {
  readonly id: string
  readonly name: string
  readonly limiter: OutboundWorkerConfig['limiter']
  readonly adapt: OutboundWorkerConfig['adapt']
  /** Whether the upstream states its quota in headers. */
  readonly headers: boolean
  /** A row of the requests-and-tokens table. */
  readonly tokens?: true
}

const ROWS: readonly Row[] = [
  { id: 'headers', name: "fleetlimit, adapt: 'headers'", limiter: 'fleetlimit', adapt: 'headers', headers: true },
  {
    id: 'aimd',
    name: "fleetlimit, adapt: 'aimd' (no quota headers)",
    limiter: 'fleetlimit',
    adapt: 'aimd',
    headers: false,
  },
  { id: 'false', name: 'fleetlimit, adapt: false', limiter: 'fleetlimit', adapt: false, headers: true },
  {
    id: 'bottleneck',
    name: 'Bottleneck 2.19.5 (Redis clustering, reservoir from headers)',
    limiter: 'bottleneck',
    adapt: false,
    headers: true,
  },
]

const TOKEN_ROWS: readonly Row[] = [
  {
    id: 'tokens-headers',
    name: "fleetlimit, adapt: 'headers'",
    limiter: 'fleetlimit',
    adapt: 'headers',
    headers: true,
    tokens: true,
  },
  {
    id: 'tokens-aimd',
    name: "fleetlimit, adapt: 'aimd' (no quota headers)",
    limiter: 'fleetlimit',
    adapt: 'aimd',
    headers: false,
    tokens: true,
  },
  {
    id: 'tokens-false',
    name: 'fleetlimit, adapt: false',
    limiter: 'fleetlimit',
    adapt: false,
    headers: true,
    tokens: true,
  },
]

export interface OutboundRow extends UpstreamCounts {
  readonly id: string
  readonly name: string
  readonly headers: boolean
  /** 429s / requests that reached the upstream. */
  readonly refusedShare: number
  /** Served / the quota of every window of the run. */
  readonly servedShare: number
  readonly calls: number
  readonly errors: Record<string, number>
}

async function measure(row: Row, redisUrl: string, scenario: OutboundScenario): Promise<OutboundRow> {
  const { workers: count, concurrency, limit, windowMs, changeAtMs, durationMs, tokens } = scenario
  // The requests-and-tokens upstream keeps its requests quota: its tokens quota is the one that drops.
  const quotas = row.tokens ? ([scenario.quotas[0], scenario.quotas[0]] as const) : scenario.quotas
  const upstream = await startQuotaUpstream({
    windowMs,
    quotas,
    changeAtMs,
    headers: row.headers,
    ...(row.tokens && { tokens: { perCall: tokens.perCall, quotas: tokens.quotas } }),
  })
  const key = `outbound-${row.id}-${randomBytes(4).toString('hex')}`
  const workerPath = fileURLToPath(new URL('./outbound-worker.ts', import.meta.url))
  const workers = Array.from({ length: count }, () =>
    fork(workerPath, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  )
  try {
    const ready = workers.map((child) => reply<unknown>(child))
    const config: OutboundWorkerConfig = {
      redisUrl,
      key,
      limiter: row.limiter,
      adapt: row.adapt,
      limit,
      windowMs,
      upstreamUrl: upstream.url,
      concurrency,
      ...(row.tokens && { tokens: { limit: tokens.limit, perCall: tokens.perCall } }),
    }
    for (const child of workers) child.send(config)
    await Promise.all(ready)
    const { reports, errors } = await runWorkers<OutboundWorkerReport>(workers, (startAt) => {
      upstream.start(startAt, durationMs)
      return { startAt, durationMs }
    })
    const counts = upstream.counts()
    return {
      id: row.id,
      name: row.name,
      headers: row.headers,
      ...counts,
      refusedShare: counts.requests === 0 ? 0 : counts.refused / counts.requests,
      servedShare: counts.served / counts.quota,
      calls: reports.reduce((sum, r) => sum + r.calls, 0),
      errors,
    }
  } finally {
    for (const child of workers) if (child.exitCode === null) child.kill()
    await upstream.close()
  }
}

const percent = (ratio: number) => `${(ratio * 100).toFixed(1)} %`

export async function outbound(
  scenario: OutboundScenario = OUTBOUND_SCENARIO,
  parts: { readonly priorities?: PrioritiesScenario; readonly tokens?: TokenScenario } = {},
): Promise<PartResult> {
  const server = await startRedisServer()
  const rows: OutboundRow[] = []
  const tokenRows: OutboundRow[] = []
  let priorities: Awaited<ReturnType<typeof outboundPriorities>>
  let tokens: Awaited<ReturnType<typeof outboundTokens>>
  const tokenScenario = parts.tokens ?? TOKEN_SCENARIO
  try {
    for (const row of ROWS) rows.push(await measure(row, server.url, scenario))
    for (const row of TOKEN_ROWS) tokenRows.push(await measure(row, server.url, scenario))
    priorities = await outboundPriorities(server.url, parts.priorities ?? PRIORITIES_SCENARIO)
    tokens = await outboundTokens(server.url, tokenScenario)
  } finally {
    await server.stop()
  }
  const { workers, concurrency, limit, windowMs, quotas, changeAtMs, durationMs } = scenario
  const s = (ms: number) => `${ms / 1000} s`
  const errorsOf = (row: OutboundRow) =>
    Object.entries(row.errors)
      .map(([message, times]) => `${times} × ${message.replaceAll('|', '\\|').replaceAll('\n', ' ')}`)
      .join('; ') || 'none'
  const markdown = [
    `${workers} worker processes, each \`createRateLimiter({ limit: ${limit}, window: ${windowMs} })\` on one Redis`,
    `and ${concurrency === 1 ? 'one loop' : `${concurrency} loops`} calling one upstream through it for ${s(durationMs)}. The upstream allows ${quotas[0]} requests`,
    `per ${s(windowMs)} window (fixed windows from the start), then ${quotas[1]} after ${s(changeAtMs)}, answering 429 with`,
    'Retry-After beyond it; where the row says so, every answer states the quota (`RateLimit-Policy`/`RateLimit` and',
    '`x-ratelimit-limit`/`-remaining`/`-reset`, resets in whole seconds). Requests and 429s are what reached the',
    'upstream; served is its 200s over the quota of every window of the run (what a perfect fleet gets).',
    '',
    '| limiter | quota headers | requests | 429s | 429 share | served | share of quota served | errors |',
    '|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${r.headers ? 'yes' : 'no'} | ${r.requests} | **${r.refused}** | ${percent(r.refusedShare)} | ` +
        `${r.served}/${r.quota} | **${percent(r.servedShare)}** | ${errorsOf(r)} |`,
    ),
    '',
    'Per window (served/refused), as the upstream counted them:',
    '',
    `| limiter | ${rows[0]?.windows.map((w, i) => `${s(i * windowMs)} (quota ${w.quota})`).join(' | ')} |`,
    `|---|${rows[0]?.windows.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.name} | ${r.windows.map((w) => `${w.served}/${w.refused}`).join(' | ')} |`),
    '',
    ...tokensTable(tokenRows, scenario),
    priorities.markdown,
    '',
    tokens.markdown,
  ].join('\n')
  const data = {
    scenario,
    rows,
    tokenRows,
    priorities: { scenario: priorities.scenario, rows: priorities.rows },
    tokens: { scenario: tokenScenario, rows: tokens.rows, ideal: tokens.ideal },
  }
  return { title: 'Outbound: learning the upstream’s quota', markdown, data }
}

/**
 * The calls a perfect fleet gets served in each window of a requests-and-tokens row: as many as both quotas allow.
 */
export function callsAllowed(row: OutboundRow, perCall: number): number[] {
  return row.windows.map((w) => Math.min(w.quota, Math.floor((w.tokenQuota ?? Number.POSITIVE_INFINITY) / perCall)))
}

/** The second table: two policies (requests and tokens) against an upstream whose tokens quota drops. */
function tokensTable(rows: readonly OutboundRow[], scenario: OutboundScenario): string[] {
  const { limit, windowMs, quotas, changeAtMs, durationMs, tokens } = scenario
  const s = (ms: number) => `${ms / 1000} s`
  const allowed = (r: OutboundRow) => callsAllowed(r, tokens.perCall).reduce((a, b) => a + b, 0)
  return [
    `Requests and tokens: the same fleet, each limiter with two policies, \`rpm\` (limit ${limit}) and \`tpm\``,
    `(limit ${tokens.limit}), per ${s(windowMs)}, each call costing \`{ rpm: 1, tpm: ${tokens.perCall} }\`, for ${s(durationMs)}. The`,
    `upstream allows ${quotas[0]} requests and ${tokens.quotas[0]} tokens per window, then ${tokens.quotas[1]} tokens`,
    `after ${s(changeAtMs)} (its requests quota binds first, then its tokens quota), and states both as OpenAI does`,
    '(`x-ratelimit-limit-requests`/`-tokens` and their `-remaining-`/`-reset-`) except in the `aimd` row. Calls',
    'served is over the most both quotas allow in each window; each quota served over that quota in every window',
    '(each binds in half the run, so a perfect fleet serves 75 % of each).',
    '',
    '| limiter | quota headers | requests | 429s | 429 share | calls served | share of calls allowed | share of requests quota | tokens served | share of tokens quota | errors |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map((r) => {
      const calls = allowed(r)
      const errors =
        Object.entries(r.errors)
          .map(([message, times]) => `${times} × ${message.replaceAll('|', '\\|').replaceAll('\n', ' ')}`)
          .join('; ') || 'none'
      return (
        `| ${r.name} | ${r.headers ? 'yes' : 'no'} | ${r.requests} | **${r.refused}** | ${percent(r.refusedShare)} | ` +
        `${r.served}/${calls} | **${percent(calls === 0 ? 0 : r.served / calls)}** | ${percent(r.servedShare)} | ` +
        `${r.tokensServed}/${r.tokenQuota} | ` +
        `${percent((r.tokensServed ?? 0) / (r.tokenQuota ?? 1))} | ${errors} |`
      )
    }),
    '',
    'Per window (served/refused calls), as the upstream counted them:',
    '',
    `| limiter | ${rows[0]?.windows.map((w, i) => `${s(i * windowMs)} (${w.quota} req, ${w.tokenQuota} tok)`).join(' | ')} |`,
    `|---|${rows[0]?.windows.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.name} | ${r.windows.map((w) => `${w.served}/${w.refused}`).join(' | ')} |`),
    '',
  ]
}
