// The outbound part's upstream: counts arrivals in fixed windows from the run's start, admits up to its quota per
// window (a quota that drops mid-run), answers 429 with Retry-After beyond it, and with `headers` states its quota
// on every answer (IETF RateLimit-Policy/RateLimit and x-ratelimit-*), as a partner API or an LLM provider does.
// With `tokens`, each call also costs tokens against a tokens quota per window, and the answers state both quotas
// as OpenAI does (x-ratelimit-*-requests and -tokens).
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface QuotaUpstreamOptions {
  readonly windowMs: number
  /** The quota per window before `changeAtMs`, and after. */
  readonly quotas: readonly [number, number]
  /** When the quota changes, in ms from the start. */
  readonly changeAtMs: number
  /** Whether every answer states the quota in headers. */
  readonly headers: boolean
  /** A tokens quota per window too (before `changeAtMs`, and after), and what each call costs of it. */
  readonly tokens?: { readonly perCall: number; readonly quotas: readonly [number, number] }
}

/** A window's counts: its quotas, what it served and what it refused. */
export interface WindowCounts {
  readonly quota: number
  readonly served: number
  readonly refused: number
  /** With a tokens quota: the window's, and the tokens of the calls it served. */
  readonly tokenQuota?: number
  readonly tokensServed?: number
}

export interface UpstreamCounts {
  /** Every request that arrived in the run, refused ones included. */
  readonly requests: number
  readonly served: number
  readonly refused: number
  /** The quota of every window the run spans: what a perfect fleet would have been served. */
  readonly quota: number
  /** Per window of the run: its quota, what it served and what it refused. */
  readonly windows: readonly WindowCounts[]
  /** With a tokens quota: the tokens served, and the tokens quota of every window of the run. */
  readonly tokensServed?: number
  readonly tokenQuota?: number
}

export async function startQuotaUpstream({ windowMs, quotas, changeAtMs, headers, tokens }: QuotaUpstreamOptions) {
  let startAt = Number.POSITIVE_INFINITY
  let endAt = Number.POSITIVE_INFINITY
  // Per window: the calls that arrived, and those served (a call refused for tokens is refused, not counted).
  const used = new Map<number, number>()
  const admitted = new Map<number, number>()
  let served = 0
  let refused = 0
  const quotaAt = (sinceStart: number) => (sinceStart < changeAtMs ? quotas[0] : quotas[1])
  const tokenQuotaAt = (sinceStart: number) =>
    tokens === undefined ? Number.POSITIVE_INFINITY : sinceStart < changeAtMs ? tokens.quotas[0] : tokens.quotas[1]
  const perCall = tokens?.perCall ?? 0

  const server = createServer((req, res) => {
    req.resume()
    const now = Date.now()
    if (now < startAt || now >= endAt) {
      res.writeHead(503, { 'retry-after': '1' }).end()
      return
    }
    const index = Math.floor((now - startAt) / windowMs)
    const quota = quotaAt(index * windowMs)
    const tokenQuota = tokenQuotaAt(index * windowMs)
    const count = (used.get(index) ?? 0) + 1
    used.set(index, count)
    const before = admitted.get(index) ?? 0
    const allowed = count <= quota && (before + 1) * perCall <= tokenQuota
    if (allowed) {
      served++
      admitted.set(index, before + 1)
    } else refused++
    // Whole seconds, rounded up, as the fields allow.
    const resetS = Math.ceil((startAt + (index + 1) * windowMs - now) / 1000)
    const remaining = Math.max(0, quota - count)
    const calls = admitted.get(index) ?? 0
    const fields: Record<string, string> = !headers
      ? {}
      : tokens
        ? {
            'x-ratelimit-limit-requests': String(quota),
            'x-ratelimit-remaining-requests': String(Math.max(0, quota - calls)),
            'x-ratelimit-reset-requests': `${resetS}s`,
            'x-ratelimit-limit-tokens': String(tokenQuota),
            'x-ratelimit-remaining-tokens': String(Math.max(0, tokenQuota - calls * perCall)),
            'x-ratelimit-reset-tokens': `${resetS}s`,
          }
        : {
            'ratelimit-policy': `"default";q=${quota};w=${Math.ceil(windowMs / 1000)}`,
            ratelimit: `"default";r=${remaining};t=${resetS}`,
            'x-ratelimit-limit': String(quota),
            'x-ratelimit-remaining': String(remaining),
            'x-ratelimit-reset': String(resetS),
          }
    if (!allowed) fields['retry-after'] = String(resetS)
    res.writeHead(allowed ? 200 : 429, fields).end(allowed ? 'ok' : 'slow down')
  })
  server.keepAliveTimeout = 60_000
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    /** Counts from `at` (epoch ms) for `durationMs`; arrivals outside the run are refused with 503 and not counted. */
    start(at: number, durationMs: number) {
      startAt = at
      endAt = at + durationMs
    },
    counts(): UpstreamCounts {
      const windows = Math.ceil((endAt - startAt) / windowMs)
      const perWindow = Array.from({ length: windows }, (_, i): WindowCounts => {
        const quota = quotaAt(i * windowMs)
        const arrived = used.get(i) ?? 0
        const ok = admitted.get(i) ?? 0
        const counts = { quota, served: ok, refused: arrived - ok }
        return tokens ? { ...counts, tokenQuota: tokenQuotaAt(i * windowMs), tokensServed: ok * perCall } : counts
      })
      const quota = perWindow.reduce((sum, w) => sum + w.quota, 0)
      const counts = { requests: served + refused, served, refused, quota, windows: perWindow }
      if (!tokens) return counts
      const sum = (of: (w: WindowCounts) => number | undefined) => perWindow.reduce((n, w) => n + (of(w) ?? 0), 0)
      return { ...counts, tokensServed: sum((w) => w.tokensServed), tokenQuota: sum((w) => w.tokenQuota) }
    },
    async close() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
