// The outbound part's LLM-shaped workload: worker processes share a tokens-per-window quota whose calls' costs are
// known only from the answers (a skewed distribution, settled after the call). One row per way of reserving a call's
// tokens, and Bottleneck's nearest equivalent; the upstream counts every window of arrivals. Beside them, the same
// calls under an ideal scheduler in virtual time (outbound-tokens-ideal.ts). After `pnpm build`,
// `tsx bench/outbound-tokens.ts [row id...]` runs this table alone, on the built code as `pnpm bench` does.
import { fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { type IdealOrder, idealSpread, simulateIdeal } from './outbound-tokens-ideal.js'
import { startTokenUpstream, type TokenCounts } from './outbound-tokens-upstream.js'
import type { TokenRowKind, TokenWorkerConfig, TokenWorkerReport } from './outbound-tokens-worker.js'
import { reply, runWorkers } from './worker-fleet.js'

export interface TokenScenario {
  readonly workers: number
  /** Calls each worker keeps going at once. */
  readonly concurrency: number
  /** Tokens per window, the limiter's and the upstream's. */
  readonly limit: number
  /** A minute, scaled down: the calls' times are scaled alike. */
  readonly windowMs: number
  readonly durationMs: number
  /** Usage is measured after this much of the run (the estimate's warm-up, the fleet reaching saturation). */
  readonly warmUpMs: number
  readonly prompt: { readonly median: number; readonly sigma: number; readonly max: number }
  readonly completion: { readonly median: number; readonly sigma: number; readonly maxTokens: number }
  /** An answer's time: `baseMs` plus `msPerToken` per completion token. */
  readonly baseMs: number
  readonly msPerToken: number
  readonly transitMs: number
  readonly estimate: { readonly initial: number; readonly percentile: number }
  readonly seed: number
}

export const TOKEN_SCENARIO: TokenScenario = {
  workers: 4,
  concurrency: 4,
  limit: 4_000,
  windowMs: 1_000,
  durationMs: 8_000,
  warmUpMs: 2_000,
  prompt: { median: 100, sigma: 0.6, max: 600 },
  completion: { median: 80, sigma: 1, maxTokens: 600 },
  baseMs: 30,
  msPerToken: 0.1,
  transitMs: 20,
  estimate: { initial: 300, percentile: 0.9 },
  seed: 40,
}

interface Row {
  readonly id: TokenRowKind
  readonly name: string
}

const ROWS: readonly Row[] = [
  { id: 'worst', name: 'fleetlimit, a fixed worst case (max prompt + max_tokens), settled' },
  { id: 'bound', name: 'fleetlimit, its own bound (prompt + max_tokens), settled' },
  { id: 'estimate', name: "fleetlimit, cost: 'estimate' (p90 per key), settled" },
  { id: 'bottleneck', name: 'Bottleneck 2.19.5 (Redis clustering, weight = the p90 estimate; cannot settle)' },
]

export type IdealRowKind = 'ideal-fifo' | 'ideal-first-fit'

const IDEAL_ROWS: readonly { readonly id: IdealRowKind; readonly name: string; readonly order: IdealOrder }[] = [
  { id: 'ideal-fifo', name: 'ideal scheduler: bound reserved, zero latency, virtual time (FIFO)', order: 'fifo' },
  {
    id: 'ideal-first-fit',
    name: 'ideal scheduler: bound reserved, zero latency, virtual time (any waiting call that fits)',
    order: 'first-fit',
  },
]

/** The ideal scheduler's longer runs, below the table: this many seeds from the scenario's, each this long. */
const IDEAL_SEEDS = 10
const IDEAL_LONG_MS = 60_000

export interface TokenRow extends TokenCounts {
  readonly id: TokenRowKind | IdealRowKind
  readonly name: string
  readonly calls: number
  /** Units reserved and settled over every admitted call; undefined for Bottleneck, which does not settle. */
  readonly meanReserved: number | undefined
  readonly meanSettled: number | undefined
  /**
   * The mean of what calls in flight held above (or, below 0, under) their true cost, over the limit: the share of
   * the quota a saturated fleet cannot use (or may go over) while calls are in flight.
   */
  readonly inFlightExcessShare: number | undefined
  /** What the reservations leave usable: 1 less the share held over true cost (when above 0) and the transit margin. */
  readonly ceiling: number | undefined
  readonly errors: Record<string, number>
}

async function measure(row: Row, redisUrl: string, scenario: TokenScenario): Promise<TokenRow> {
  const { workers: count, windowMs, limit, durationMs, warmUpMs, completion } = scenario
  const upstream = await startTokenUpstream({
    windowMs,
    limit,
    maxTokens: completion.maxTokens,
    medianTokens: completion.median,
    sigma: completion.sigma,
    seed: scenario.seed,
    baseMs: scenario.baseMs,
    msPerToken: scenario.msPerToken,
  })
  const key = `tokens-${row.id}-${randomBytes(4).toString('hex')}`
  const workerPath = fileURLToPath(new URL('./outbound-tokens-worker.ts', import.meta.url))
  const workers = Array.from({ length: count }, () =>
    fork(workerPath, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  )
  try {
    const ready = workers.map((child) => reply<unknown>(child))
    workers.forEach((child, i) => {
      const config: TokenWorkerConfig = {
        redisUrl,
        key,
        kind: row.id,
        limit,
        windowMs,
        promptMedian: scenario.prompt.median,
        promptSigma: scenario.prompt.sigma,
        maxPrompt: scenario.prompt.max,
        maxTokens: completion.maxTokens,
        seed: scenario.seed * 100 + i,
        concurrency: scenario.concurrency,
        upstreamUrl: upstream.url,
        transitMs: scenario.transitMs,
        initial: scenario.estimate.initial,
        percentile: scenario.estimate.percentile,
      }
      child.send(config)
    })
    await Promise.all(ready)
    const { reports, errors } = await runWorkers<TokenWorkerReport>(workers, (startAt) => {
      upstream.start(startAt, durationMs, warmUpMs)
      return { startAt, durationMs }
    })
    const sum = (field: 'settles' | 'reservedUnits' | 'settledUnits' | 'excessUnitMs' | 'calls') =>
      reports.reduce((total, r) => total + r[field], 0)
    const counts = upstream.counts()
    const settles = row.id !== 'bottleneck'
    const excess = settles ? sum('excessUnitMs') / durationMs / limit : undefined
    return {
      id: row.id,
      name: row.name,
      ...counts,
      calls: sum('calls'),
      meanReserved: settles ? sum('reservedUnits') / Math.max(1, sum('settles')) : undefined,
      meanSettled: settles ? sum('settledUnits') / Math.max(1, sum('settles')) : undefined,
      // The time average of the excess in flight, over the run's length, per unit of the limit.
      inFlightExcessShare: excess,
      ceiling: excess === undefined ? undefined : 1 - Math.max(0, excess) - scenario.transitMs / windowMs,
      errors,
    }
  } finally {
    for (const child of workers) if (child.exitCode === null) child.kill()
    await upstream.close()
  }
}

const IDEAL_ORDER_NAMES: Record<IdealOrder, string> = {
  fifo: 'FIFO',
  'first-fit': 'any waiting call that fits',
  'smallest-first': 'the smallest waiting bound first',
}

const range = ({ min, max }: { readonly min: number; readonly max: number }) =>
  `${(min * 100).toFixed(1)} to ${(max * 100).toFixed(1)} %`
const percent = (ratio: number | undefined) => (ratio === undefined ? '—' : `${(ratio * 100).toFixed(1)} %`)
const units = (value: number | undefined) => (value === undefined ? '—' : value.toFixed(0))

/** The ideal scheduler's row: the scenario in virtual time, in process. */
function idealRow(row: (typeof IDEAL_ROWS)[number], scenario: TokenScenario): TokenRow {
  const { excessPerAdmission, latestExcessShare, ...result } = simulateIdeal(scenario, { order: row.order })
  return { id: row.id, name: row.name, ...result, errors: {} }
}

/**
 * Runs every row (or those of `only`, by id) on the Redis at `redisUrl`: the rows, the ideal scheduler over longer
 * runs, and their table.
 */
export async function outboundTokens(
  redisUrl: string,
  scenario: TokenScenario = TOKEN_SCENARIO,
  only?: readonly string[],
): Promise<{ rows: TokenRow[]; ideal: ReturnType<typeof idealSpread>; markdown: string }> {
  const rows: TokenRow[] = []
  const wanted = (id: string) => only === undefined || only.includes(id)
  for (const row of ROWS) if (wanted(row.id)) rows.push(await measure(row, redisUrl, scenario))
  for (const row of IDEAL_ROWS) if (wanted(row.id)) rows.push(idealRow(row, scenario))
  const seeds = Array.from({ length: IDEAL_SEEDS }, (_, i) => scenario.seed + i)
  const ideal = idealSpread({ ...scenario, durationMs: IDEAL_LONG_MS }, seeds)
  const { workers, concurrency, limit, windowMs, durationMs, warmUpMs, prompt, completion } = scenario
  const errorsOf = (row: TokenRow) =>
    Object.entries(row.errors)
      .map(([message, times]) => `${times} × ${message.replaceAll('|', '\\|').replaceAll('\n', ' ')}`)
      .join('; ') || 'none'
  const markdown = [
    '### An LLM-shaped workload: tokens per window, costs known after the call',
    '',
    `${workers} worker processes, ${concurrency} loops each, call one upstream for ${durationMs / 1000} s. Its quota is ${limit} tokens`,
    `per sliding ${windowMs / 1000} s window of arrivals (a minute, scaled down), shared through one Redis. A call's prompt`,
    `is known to the caller (lognormal, median ${prompt.median}, at most ${prompt.max} tokens); its completion is drawn by the`,
    `upstream (lognormal, median ${completion.median}, sigma ${completion.sigma}, at most max_tokens = ${completion.maxTokens}),`,
    `answered after ${scenario.baseMs} ms + ${scenario.msPerToken} ms per completion token, with the usage in the body. It serves`,
    "every call, and counts as a 429 each call that puts its arrival's window over the quota (a provider would have",
    'refused it). Every fleetlimit row settles each call to the usage reported, with',
    `\`transitMs: ${scenario.transitMs}\`. Used: the tokens served after the first ${warmUpMs / 1000} s over the quota of that time.`,
    'Peak: the most tokens any window of arrivals held. Held over true cost: what calls in flight held above their',
    'true cost, on average, over the limit, a share a saturated fleet cannot use; below 0, what they held too',
    'little, which puts windows over. Ceiling: 100 % less that share and the transit margin.',
    '',
    'The ideal scheduler rows run the same calls in virtual time, in process: the same seeds and draws, each loop',
    'calling again the instant its answer comes, the same answer times. Each call reserves its bound (prompt +',
    `max_tokens), counted for the window plus the same ${scenario.transitMs} ms transit margin; it is admitted with no latency the`,
    'instant that bound fits in an exact sliding window (the oldest waiting call first, or any waiting call that',
    "fits), and settles to its true cost the instant its answer comes. The upstream's counts are computed as above.",
    'A limiter that keeps every window under the quota whatever each call turns out to cost has to leave room for',
    "a call's whole bound at its admission: these rows measure what that rule leaves usable of this workload.",
    '',
    '| limiter | calls | 429s | used | peak window / limit | mean reserved | mean true cost | held over true cost | ceiling | errors |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${r.requests} | **${r.refused}** | **${percent(r.usedShare)}** | **${percent(r.peakShare)}** | ` +
        `${units(r.meanReserved)} | ${units(r.meanSettled)} | ${percent(r.inFlightExcessShare)} | ` +
        `${percent(r.ceiling)} | ${errorsOf(r)} |`,
    ),
    '',
    `The ideal scheduler over ${IDEAL_LONG_MS / 1000} s (the same warm-up), seeds ${seeds[0]} to ${seeds.at(-1)}, ` +
      'used (and peak window / limit): ' +
      ideal
        .map(
          (s) =>
            `${IDEAL_ORDER_NAMES[s.order]} ${range(s.usedShare)} (${range(s.peakShare)})` +
            (s.refused > 0 ? `, ${s.refused} 429s` : ''),
        )
        .join('; ') +
      '.',
    '',
  ].join('\n')
  return { rows, ideal, markdown }
}

async function main() {
  const server = await startRedisServer()
  try {
    const { markdown } = await outboundTokens(
      server.url,
      TOKEN_SCENARIO,
      process.argv.length > 2 ? process.argv.slice(2) : undefined,
    )
    console.log(markdown)
  } finally {
    await server.stop()
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main()
