// The LLM-shaped upstream of the outbound part: a tokens-per-window quota in a sliding window of arrivals. Each call
// brings its prompt's tokens (the `x-prompt-tokens` header); the upstream draws its completion from a seeded skewed
// distribution (capped at max_tokens) and answers after some ms with the usage in the body, as an LLM API does. It
// serves every call, and counts as a refusal each call whose tokens put the window of its arrival over the quota:
// what a provider would have answered 429, without a refusal changing what the fleet does next.
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface TokenUpstreamOptions {
  readonly windowMs: number
  /** Tokens per sliding window of `windowMs`. */
  readonly limit: number
  /** The most tokens a completion takes (a request's max_tokens). */
  readonly maxTokens: number
  /** The completions' median, and the spread of their logarithm (a lognormal distribution). */
  readonly medianTokens: number
  readonly sigma: number
  readonly seed: number
  /** The time an answer takes: `baseMs` plus `msPerToken` for each completion token. */
  readonly baseMs: number
  readonly msPerToken: number
}

export interface TokenCounts {
  readonly requests: number
  /** Calls whose tokens put the window of their arrival over the quota. */
  readonly refused: number
  /** Tokens served after the warm-up, over the quota of that time: the share of the quota used at saturation. */
  readonly usedShare: number
  /** The most tokens any window of arrivals held, over the limit. */
  readonly peakShare: number
  readonly meanCost: number
}

/** A seeded uniform generator on [0, 1) (mulberry32). */
export function seededUniform(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

/** Whole numbers from a lognormal distribution of that median and sigma, at least 1 and at most `max`. */
export function seededLognormal(seed: number, median: number, sigma: number, max: number): () => number {
  const uniform = seededUniform(seed)
  return () => {
    // Box-Muller: one standard normal from two uniforms.
    const z = Math.sqrt(-2 * Math.log(1 - uniform())) * Math.cos(2 * Math.PI * uniform())
    return Math.min(max, Math.max(1, Math.round(median * Math.exp(sigma * z))))
  }
}

/**
 * The units of the entries within the last `spanMs`: a queue of (time, units), trimmed as time goes, entries added
 * in time order. The upstream counts its arrivals' tokens with it, and the ideal scheduler its reservations (whose
 * units a settle changes while they are in it).
 */
export function slidingSum(spanMs: number) {
  const times: number[] = []
  const units: number[] = []
  let head = 0
  let sum = 0
  return {
    /** The units of the entries after `now - spanMs`. */
    at(now: number): number {
      while (head < times.length && (times[head] as number) <= now - spanMs) sum -= units[head++] as number
      return sum
    },
    /** Records `count` units at `now`; returns the entry, for a settle. */
    add(now: number, count: number): number {
      times.push(now)
      units.push(count)
      sum += count
      return times.length - 1
    },
    /** Sets an entry's units to `count`; one that has left the span changes nothing. */
    settle(entry: number, count: number) {
      if (entry < head) return
      sum += count - (units[entry] as number)
      units[entry] = count
    },
    /** When the oldest entry in the span leaves it, or infinity when none is in it. */
    nextExpiry(): number {
      return head < times.length ? (times[head] as number) + spanMs : Number.POSITIVE_INFINITY
    },
  }
}

/**
 * The upstream's counts of a run: each call's tokens at its arrival, in a sliding window of arrivals. Times are in
 * any one unit (`windowMs` and every time alike), so the ideal scheduler's virtual time counts the same way.
 */
export function countArrivals(windowMs: number, limit: number) {
  let startAt = Number.POSITIVE_INFINITY
  let endAt = Number.POSITIVE_INFINITY
  let measureFrom = Number.POSITIVE_INFINITY
  const window = slidingSum(windowMs)
  let requests = 0
  let refused = 0
  let servedTokens = 0
  let measuredTokens = 0
  let peak = 0
  return {
    /** Counts from `at` for `durationMs`; usage is measured after `warmUpMs` of that. */
    start(at: number, durationMs: number, warmUpMs: number) {
      startAt = at
      endAt = at + durationMs
      measureFrom = at + warmUpMs
    },
    /** Whether an arrival at `now` is within the run (one outside it is counted nowhere). */
    counting: (now: number) => now >= startAt && now < endAt,
    /** Counts an arrival of `tokens` at `now`, a time within the run and no earlier than the last one. */
    add(now: number, tokens: number) {
      requests++
      window.add(now, tokens)
      const held = window.at(now)
      peak = Math.max(peak, held)
      if (held > limit) refused++
      servedTokens += tokens
      if (now >= measureFrom) measuredTokens += tokens
    },
    counts(): TokenCounts {
      const measuredWindows = (endAt - measureFrom) / windowMs
      return {
        requests,
        refused,
        usedShare: measuredTokens / (limit * measuredWindows),
        peakShare: peak / limit,
        meanCost: requests === 0 ? 0 : servedTokens / requests,
      }
    },
  }
}

export async function startTokenUpstream(options: TokenUpstreamOptions) {
  const { windowMs, limit } = options
  const completion = seededLognormal(options.seed, options.medianTokens, options.sigma, options.maxTokens)
  const arrivals = countArrivals(windowMs, limit)

  const server = createServer((req, res) => {
    req.resume()
    const now = performance.now()
    const answer = (total: number) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ usage: { total_tokens: total } }))
    // Outside the run (the workers' warm-up), a call is answered and counted nowhere.
    if (!arrivals.counting(now)) return answer(0)
    const prompt = Number(req.headers['x-prompt-tokens'] ?? 0)
    const output = completion()
    const total = prompt + output
    arrivals.add(now, total)
    setTimeout(() => answer(total), options.baseMs + output * options.msPerToken)
  })
  server.keepAliveTimeout = 60_000
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat/completions`,
    /** Counts from `at` (epoch ms) for `durationMs`; usage is measured after `warmUpMs` of that. */
    start(at: number, durationMs: number, warmUpMs: number) {
      arrivals.start(performance.now() + (at - Date.now()), durationMs, warmUpMs)
    },
    counts: (): TokenCounts => arrivals.counts(),
    async close() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
