// A stub of an LLM API with limits of its own, enforced exactly by its own clock: requests and units per
// sliding window (a request's units counted at its arrival, though its true cost is only told in the response)
// and requests in flight. Every request but `GET /stats` is a call: it holds for `?holdMs=` ms (default random
// 20-200), then answers `{"usage":{"total_tokens":N}}`; a call that would break a limit is answered 429 with
// Retry-After at once. It also measures what the fleet sent: the most in flight and per window, refused or not.
// With `headers`, every answer states the rates as OpenAI does (x-ratelimit-limit-requests/-tokens, -remaining-,
// -reset-), and `setLimits` changes them mid-run, as a provider moving an account to another tier.
import { once } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface UpstreamOptions {
  /** Requests admitted in any window; Infinity for none. */
  readonly requestsPerWindow: number
  /** Units (true costs) admitted in any window; Infinity for none. */
  readonly unitsPerWindow: number
  /** Requests held at once; Infinity for none. */
  readonly inFlight: number
  /** The sliding window of both rates. Default 60 000 ms. */
  readonly windowMs?: number
  /** A call's true cost, chosen at its arrival. Default: a random integer from 10 to 200. */
  readonly cost?: () => number
  /** Default 0: a free port of 127.0.0.1. */
  readonly port?: number
  /** The stub's clock, in ms. Default: epoch ms from performance.now(). A test may pass one it moves by hand. */
  readonly now?: () => number
  /** Whether answers state the rates in OpenAI's x-ratelimit-* headers (units as tokens). Default false. */
  readonly headers?: boolean
}

/** The rates an upstream enforces now: they may change mid-run (`setLimits`). */
export type Rates = Pick<UpstreamOptions, 'requestsPerWindow' | 'unitsPerWindow'>

export interface UpstreamStats {
  /** The limits it enforces; null for none. */
  readonly limits: {
    readonly requestsPerWindow: number | null
    readonly unitsPerWindow: number | null
    readonly inFlight: number | null
    readonly windowMs: number
  }
  /** Calls admitted (each answered 200 once its hold ends) and their units. */
  readonly served: number
  readonly units: number
  /** Calls answered 429, and how many of them would have broken each limit (one may break several). */
  readonly rejected: number
  readonly rejectedBy: { readonly inFlight: number; readonly requests: number; readonly units: number }
  /** Calls held now. */
  readonly inFlight: number
  /**
   * What the fleet sent, each call counted at its arrival whether admitted or refused, so a limiter's overshoot
   * shows as a number over the limit: the most calls in flight at once (held, plus the one arriving), and the
   * most calls and units in any window (t - windowMs, t].
   */
  readonly maxInFlight: number
  readonly maxRequestsInWindow: number
  readonly maxUnitsInWindow: number
  /** The first call's arrival and the latest answer, on the stub's clock; null before any call. */
  readonly startedAt: number | null
  readonly endedAt: number | null
}

export interface Upstream {
  /** Its base URL, without a trailing slash. */
  readonly url: string
  /** Enforces (and states) other rates from now on; calls already admitted stay counted. */
  setLimits(rates: Rates): void
  stats(): UpstreamStats
  close(): Promise<void>
}

const randomInt = (min: number, max: number) => min + Math.floor(Math.random() * (max - min + 1))
const epochNow = () => performance.timeOrigin + performance.now()

/** Arrivals within the last window, oldest first: a queue that drops its head as time passes. */
class Trail {
  private readonly times: number[] = []
  private readonly costs: number[] = []
  private head = 0
  count = 0
  units = 0

  constructor(private readonly windowMs: number) {}

  /** Forgets the arrivals at or before `at - windowMs`: what is left lies in (at - windowMs, at]. */
  slide(at: number): void {
    while (this.head < this.times.length && (this.times[this.head] as number) <= at - this.windowMs) {
      this.count--
      this.units -= this.costs[this.head] as number
      this.head++
    }
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times.splice(0, this.head)
      this.costs.splice(0, this.head)
      this.head = 0
    }
  }

  push(at: number, cost: number): void {
    this.times.push(at)
    this.costs.push(cost)
    this.count++
    this.units += cost
  }

  /** The time the i-th oldest arrival leaves the window. */
  leaves(i: number): number {
    return (this.times[this.head + i] as number) + this.windowMs
  }

  /** The time enough of the oldest arrivals have left for `cost` more units to fit under `limit`. */
  fitsAt(cost: number, limit: number): number {
    let units = this.units
    for (let i = 0; i < this.count; i++) {
      units -= this.costs[this.head + i] as number
      if (units + cost <= limit) return this.leaves(i)
    }
    // More than the limit alone: it never fits; a window is the longest honest wait to name.
    return (this.count > 0 ? this.leaves(this.count - 1) : 0) + this.windowMs
  }
}

export async function startUpstream(options: UpstreamOptions): Promise<Upstream> {
  const { inFlight, windowMs = 60_000, port = 0, now = epochNow } = options
  let { requestsPerWindow, unitsPerWindow } = options
  const check = (values: Record<string, number>) => {
    for (const [name, value] of Object.entries(values)) {
      if (!(value > 0))
        throw new RangeError(`startUpstream: ${name} must be above 0 (Infinity for no limit), not ${value}`)
    }
  }
  check({ requestsPerWindow, unitsPerWindow, inFlight, windowMs })
  const costOf = options.cost ?? (() => randomInt(10, 200))
  const admitted = new Trail(windowMs)
  const offered = new Trail(windowMs)
  // The calls held now: when each one's hold ends, and its timer.
  const held = new Map<NodeJS.Timeout, number>()
  const totals = { served: 0, units: 0, rejected: 0, maxInFlight: 0, maxRequestsInWindow: 0, maxUnitsInWindow: 0 }
  const rejectedBy = { inFlight: 0, requests: 0, units: 0 }
  let startedAt: number | null = null
  let endedAt: number | null = null

  /** The wait, in ms, until the call fits every limit it would break now (each counted); 0 when it fits. */
  function waitFor(at: number, cost: number): number {
    let until = at
    if (held.size + 1 > inFlight) {
      rejectedBy.inFlight++
      until = Math.max(until, Math.min(...held.values()))
    }
    if (admitted.count + 1 > requestsPerWindow) {
      rejectedBy.requests++
      until = Math.max(until, admitted.leaves(admitted.count - requestsPerWindow))
    }
    if (admitted.units + cost > unitsPerWindow) {
      rejectedBy.units++
      until = Math.max(until, admitted.fitsAt(cost, unitsPerWindow))
    }
    return until - at
  }

  function answer(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body))
  }

  /**
   * OpenAI's headers at `at`, once the call is counted: each rate's limit, what is left of it, and the time until
   * it has room again (with none left, until enough of the oldest calls leave the window for one more; else until
   * the oldest leaves). A rate without a limit is not stated.
   */
  function rateHeaders(at: number): Record<string, string> {
    if (!options.headers) return {}
    const oldest = admitted.count > 0 ? admitted.leaves(0) : at
    const rates: Record<string, string> = {}
    const state = (suffix: string, limit: number, used: number, roomAt: () => number) => {
      if (!Number.isFinite(limit)) return
      const remaining = Math.max(0, limit - used)
      rates[`x-ratelimit-limit-${suffix}`] = String(limit)
      rates[`x-ratelimit-remaining-${suffix}`] = String(remaining)
      rates[`x-ratelimit-reset-${suffix}`] = `${Math.max(0, Math.ceil((remaining > 0 ? oldest : roomAt()) - at))}ms`
    }
    state('requests', requestsPerWindow, admitted.count, () => admitted.leaves(admitted.count - requestsPerWindow))
    state('tokens', unitsPerWindow, admitted.units, () => admitted.fitsAt(1, unitsPerWindow))
    return rates
  }

  function call(holdMs: number, res: ServerResponse): void {
    const at = now()
    startedAt ??= at
    const cost = costOf()
    admitted.slide(at)
    offered.slide(at)
    offered.push(at, cost)
    totals.maxInFlight = Math.max(totals.maxInFlight, held.size + 1)
    totals.maxRequestsInWindow = Math.max(totals.maxRequestsInWindow, offered.count)
    totals.maxUnitsInWindow = Math.max(totals.maxUnitsInWindow, offered.units)
    const wait = waitFor(at, cost)
    if (wait > 0) {
      totals.rejected++
      const retryAfter = String(Math.max(1, Math.ceil(wait / 1_000)))
      const error = { type: 'rate_limit_exceeded', message: `limit reached: retry after ${retryAfter} s` }
      endedAt = at
      answer(res, 429, { error }, { 'retry-after': retryAfter, ...rateHeaders(at) })
      return
    }
    admitted.push(at, cost)
    totals.served++
    totals.units += cost
    const timer = setTimeout(() => {
      // Freed before the answer is sent, so a client that calls again on reading it finds the slot free.
      held.delete(timer)
      const end = now()
      endedAt = end
      admitted.slide(end)
      answer(res, 200, { usage: { total_tokens: cost } }, rateHeaders(end))
    }, holdMs)
    held.set(timer, at + holdMs)
  }

  const orNull = (limit: number) => (Number.isFinite(limit) ? limit : null)
  const stats = (): UpstreamStats => ({
    limits: {
      requestsPerWindow: orNull(requestsPerWindow),
      unitsPerWindow: orNull(unitsPerWindow),
      inFlight: orNull(inFlight),
      windowMs,
    },
    served: totals.served,
    units: totals.units,
    rejected: totals.rejected,
    rejectedBy: { ...rejectedBy },
    inFlight: held.size,
    maxInFlight: totals.maxInFlight,
    maxRequestsInWindow: totals.maxRequestsInWindow,
    maxUnitsInWindow: totals.maxUnitsInWindow,
    startedAt,
    endedAt,
  })

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://upstream')
    req.resume()
    const hold = url.searchParams.get('holdMs')
    const holdMs = hold === null ? randomInt(20, 200) : Number(hold)
    if (req.method === 'GET' && url.pathname === '/stats') answer(res, 200, stats())
    else if (!(holdMs >= 0 && Number.isFinite(holdMs))) {
      answer(res, 400, { error: { type: 'invalid_request', message: `holdMs: ${hold}` } })
    } else call(holdMs, res)
  })
  server.listen(port, '127.0.0.1')
  await once(server, 'listening')

  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    setLimits(rates) {
      check(rates)
      ;({ requestsPerWindow, unitsPerWindow } = rates)
    },
    stats,
    async close() {
      for (const timer of held.keys()) clearTimeout(timer)
      held.clear()
      // Keep-alive connections would hold close() open.
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
