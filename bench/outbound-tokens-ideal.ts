// The LLM-shaped workload of outbound-tokens.ts under an ideal scheduler, in virtual time: the same loops, prompts,
// completions and answer times, but admission is exact and instant. Each call reserves its bound (prompt +
// max_tokens) and is admitted the moment the units in the window (in-flight calls at their bound, answered ones at
// their true cost, each counted for the window plus the transit margin) leave room for that bound; it settles to
// its true cost the moment its answer comes. The upstream's counts are the bench's (countArrivals), so the row
// measures what any limiter that never lets a window go over can use of this workload.
// `tsx bench/outbound-tokens-ideal.ts` prints the figures for 8 s and 60 s over several seeds.
import { fileURLToPath } from 'node:url'
import type { TokenScenario } from './outbound-tokens.js'
import { countArrivals, seededLognormal, slidingSum, type TokenCounts } from './outbound-tokens-upstream.js'

/**
 * Which waiting calls are admitted when room frees: the oldest first and none past one that does not fit (`fifo`),
 * every one that fits in the order they came (`first-fit`), or every one that fits, the smallest bound first
 * (`smallest-first`).
 */
export type IdealOrder = 'fifo' | 'first-fit' | 'smallest-first'

export interface IdealOptions {
  readonly order: IdealOrder
  /** How much longer than the window an admission's units count; default the scenario's `transitMs`. */
  readonly transitMs?: number
}

export interface IdealResult extends TokenCounts {
  /** Calls the loops started before the end (a call still waiting then is abandoned, as in the bench). */
  readonly calls: number
  /** Over every call answered before the end: units reserved and true cost. */
  readonly meanReserved: number
  readonly meanSettled: number
  /** The time average of (reserved - true cost) of the calls in flight, over the limit, as the bench measures it. */
  readonly inFlightExcessShare: number
  /** 1 less the share held over true cost and the transit margin: the table's ceiling column. */
  readonly ceiling: number
  /** The mean of (bound - true cost) over the admissions, over the limit. */
  readonly excessPerAdmission: number
  /**
   * The time average, after the warm-up, of the latest admission's (bound - true cost) over the limit: after an
   * admission the window of arrivals holds at most the limit less that call's excess until the next admission, so
   * the share used stays near or under 1 less this, whatever the order.
   */
  readonly latestExcessShare: number
}

/** A unit of virtual time: a microsecond, so that every time of the scenario is a whole number. */
const US_PER_MS = 1_000

interface Waiting {
  readonly prompt: number
  readonly bound: number
  readonly worker: number
  /** Arrival order, for FIFO and for ties. */
  readonly seq: number
}

interface InFlight {
  readonly entry: number
  readonly bound: number
  readonly cost: number
  readonly worker: number
  readonly admittedAt: number
  readonly answerAt: number
  readonly seq: number
}

/** Runs the scenario's fleet under the ideal scheduler from time 0 to `durationMs`. */
export function simulateIdeal(scenario: TokenScenario, options: IdealOptions): IdealResult {
  const { limit, windowMs, durationMs, warmUpMs, prompt, completion } = scenario
  const transitMs = options.transitMs ?? scenario.transitMs
  const windowUs = windowMs * US_PER_MS
  const endUs = durationMs * US_PER_MS
  const warmUpUs = warmUpMs * US_PER_MS
  const arrivals = countArrivals(windowUs, limit)
  arrivals.start(0, endUs, warmUpUs)
  // The limiter's window of reservations: each admission's units at its time, counted for the window and the
  // transit margin, an in-flight call's at its bound until it settles to its true cost.
  const reservations = slidingSum(windowUs + transitMs * US_PER_MS)
  // The draws of the bench: each worker process its own prompts, the upstream one sequence of completions.
  const prompts = Array.from({ length: scenario.workers }, (_, i) =>
    seededLognormal(scenario.seed * 100 + i, prompt.median, prompt.sigma, prompt.max),
  )
  const completions = seededLognormal(scenario.seed, completion.median, completion.sigma, completion.maxTokens)
  const answerUs = (tokens: number) => Math.round((scenario.baseMs + scenario.msPerToken * tokens) * US_PER_MS)

  let waiting: Waiting[] = []
  const inFlight: InFlight[] = []
  let seq = 0
  let calls = 0
  let settles = 0
  let reservedUnits = 0
  let settledUnits = 0
  let excessUnitUs = 0
  let admissions = 0
  let excessUnits = 0
  // The latest admission's excess, and its integral over the measured time.
  let latestExcess = 0
  let latestFrom = warmUpUs
  let latestExcessUnitUs = 0

  const start = (worker: number) => {
    calls++
    const p = (prompts[worker] as () => number)()
    waiting.push({ prompt: p, bound: p + completion.maxTokens, worker, seq: seq++ })
  }
  const admit = (now: number, call: Waiting) => {
    const output = completions()
    const cost = call.prompt + output
    arrivals.add(now, cost)
    const entry = reservations.add(now, call.bound)
    inFlight.push({
      entry,
      bound: call.bound,
      cost,
      worker: call.worker,
      admittedAt: now,
      answerAt: now + answerUs(output),
      seq: seq++,
    })
    admissions++
    excessUnits += call.bound - cost
    if (now > latestFrom) {
      latestExcessUnitUs += latestExcess * (now - latestFrom)
      latestFrom = now
    }
    latestExcess = call.bound - cost
  }
  const admitWaiting = (now: number) => {
    if (options.order === 'fifo') {
      let first = waiting[0]
      while (first && reservations.at(now) + first.bound <= limit) {
        waiting.shift()
        admit(now, first)
        first = waiting[0]
      }
      return
    }
    const candidates =
      options.order === 'smallest-first' ? [...waiting].sort((a, b) => a.bound - b.bound || a.seq - b.seq) : waiting
    const admitted = new Set<Waiting>()
    for (const call of candidates) {
      if (reservations.at(now) + call.bound > limit) continue
      admit(now, call)
      admitted.add(call)
    }
    if (admitted.size > 0) waiting = waiting.filter((call) => !admitted.has(call))
  }

  // Every loop starts at once, the workers' loops interleaved.
  for (let loop = 0; loop < scenario.concurrency; loop++) for (let w = 0; w < scenario.workers; w++) start(w)
  admitWaiting(0)
  for (;;) {
    let next = reservations.nextExpiry()
    for (const call of inFlight) next = Math.min(next, call.answerAt)
    if (next >= endUs) break
    // Units whose time has come leave the window now, so that the next expiry is a later one.
    reservations.at(next)
    // Answers due now settle, in the order they were admitted, and their loops call again at once.
    const due = inFlight
      .filter((call) => call.answerAt <= next)
      .sort((a, b) => a.answerAt - b.answerAt || a.seq - b.seq)
    for (const call of due) {
      inFlight.splice(inFlight.indexOf(call), 1)
      reservations.settle(call.entry, call.cost)
      settles++
      reservedUnits += call.bound
      settledUnits += call.cost
      excessUnitUs += (call.bound - call.cost) * (call.answerAt - call.admittedAt)
      start(call.worker)
    }
    admitWaiting(next)
  }
  if (endUs > latestFrom) latestExcessUnitUs += latestExcess * (endUs - latestFrom)

  const inFlightExcessShare = excessUnitUs / endUs / limit
  return {
    ...arrivals.counts(),
    calls,
    meanReserved: reservedUnits / Math.max(1, settles),
    meanSettled: settledUnits / Math.max(1, settles),
    inFlightExcessShare,
    ceiling: 1 - Math.max(0, inFlightExcessShare) - transitMs / windowMs,
    excessPerAdmission: excessUnits / Math.max(1, admissions) / limit,
    latestExcessShare: latestExcessUnitUs / (endUs - warmUpUs) / limit,
  }
}

export const IDEAL_ORDERS: readonly IdealOrder[] = ['fifo', 'first-fit', 'smallest-first']

/** The ideal over `seeds`, each order: the least and most of each figure, for the longer runs. */
export function idealSpread(scenario: TokenScenario, seeds: readonly number[], transitMs?: number) {
  return IDEAL_ORDERS.map((order) => {
    const runs = seeds.map((seed) =>
      simulateIdeal({ ...scenario, seed }, { order, ...(transitMs !== undefined && { transitMs }) }),
    )
    const range = (field: 'usedShare' | 'peakShare' | 'latestExcessShare') => {
      const values = runs.map((run) => run[field])
      return { min: Math.min(...values), max: Math.max(...values) }
    }
    return {
      order,
      usedShare: range('usedShare'),
      peakShare: range('peakShare'),
      latestExcessShare: range('latestExcessShare'),
      refused: runs.reduce((sum, run) => sum + run.refused, 0),
    }
  })
}

async function main() {
  const { TOKEN_SCENARIO } = await import('./outbound-tokens.js')
  const pct = (ratio: number) => `${(ratio * 100).toFixed(1)} %`
  console.log(`${TOKEN_SCENARIO.durationMs / 1000} s, seed ${TOKEN_SCENARIO.seed}:`)
  for (const transitMs of [TOKEN_SCENARIO.transitMs, 0])
    for (const order of IDEAL_ORDERS) {
      const r = simulateIdeal(TOKEN_SCENARIO, { order, transitMs })
      console.log(
        `  transit ${transitMs} ms, ${order}: calls ${r.calls}, arrivals ${r.requests}, 429s ${r.refused}, ` +
          `used ${pct(r.usedShare)}, peak ${pct(r.peakShare)}, held over true cost ${pct(r.inFlightExcessShare)}, ` +
          `ceiling ${pct(r.ceiling)}, latest admission's excess ${pct(r.latestExcessShare)}, ` +
          `excess per admission ${pct(r.excessPerAdmission)}, mean reserved ${r.meanReserved.toFixed(0)}, ` +
          `mean true cost ${r.meanSettled.toFixed(0)}`,
      )
    }
  const seeds = Array.from({ length: 10 }, (_, i) => TOKEN_SCENARIO.seed + i)
  for (const durationMs of [8_000, 60_000])
    for (const transitMs of [TOKEN_SCENARIO.transitMs, 0]) {
      console.log(`${durationMs / 1000} s, seeds ${seeds[0]}-${seeds.at(-1)}, transit ${transitMs} ms:`)
      for (const s of idealSpread({ ...TOKEN_SCENARIO, durationMs }, seeds, transitMs))
        console.log(
          `  ${s.order}: used ${pct(s.usedShare.min)} to ${pct(s.usedShare.max)}, peak ${pct(s.peakShare.min)} to ` +
            `${pct(s.peakShare.max)}, 429s ${s.refused}, latest admission's excess ${pct(s.latestExcessShare.min)} ` +
            `to ${pct(s.latestExcessShare.max)}`,
        )
    }
}

// Not awaited: outbound-tokens.ts imports this module, so it can load only once this one has finished evaluating.
if (process.argv[1] === fileURLToPath(import.meta.url))
  main().catch((error: unknown) => {
    console.error(error)
    process.exitCode = 1
  })
