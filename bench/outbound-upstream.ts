// The outbound part's upstream: counts arrivals in fixed windows from the run's start, admits up to its quota per
// window (a quota that drops mid-run), answers 429 with Retry-After beyond it, and with `headers` states its quota
// on every answer (IETF RateLimit-Policy/RateLimit and x-ratelimit-*), as a partner API or an LLM provider does.
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
}

export interface UpstreamCounts {
  /** Every request that arrived in the run, refused ones included. */
  readonly requests: number
  readonly served: number
  readonly refused: number
  /** The quota of every window the run spans: what a perfect fleet would have been served. */
  readonly quota: number
  /** Per window of the run: its quota, what it served and what it refused. */
  readonly windows: readonly { readonly quota: number; readonly served: number; readonly refused: number }[]
}

export async function startQuotaUpstream({ windowMs, quotas, changeAtMs, headers }: QuotaUpstreamOptions) {
  let startAt = Number.POSITIVE_INFINITY
  let endAt = Number.POSITIVE_INFINITY
  const used = new Map<number, number>()
  let served = 0
  let refused = 0
  const quotaAt = (sinceStart: number) => (sinceStart < changeAtMs ? quotas[0] : quotas[1])

  const server = createServer((req, res) => {
    req.resume()
    const now = Date.now()
    if (now < startAt || now >= endAt) {
      res.writeHead(503, { 'retry-after': '1' }).end()
      return
    }
    const index = Math.floor((now - startAt) / windowMs)
    const quota = quotaAt(index * windowMs)
    const count = (used.get(index) ?? 0) + 1
    used.set(index, count)
    const allowed = count <= quota
    if (allowed) served++
    else refused++
    // Whole seconds, rounded up, as the fields allow.
    const resetS = Math.ceil((startAt + (index + 1) * windowMs - now) / 1000)
    const remaining = Math.max(0, quota - count)
    const fields: Record<string, string> = headers
      ? {
          'ratelimit-policy': `"default";q=${quota};w=${Math.ceil(windowMs / 1000)}`,
          ratelimit: `"default";r=${remaining};t=${resetS}`,
          'x-ratelimit-limit': String(quota),
          'x-ratelimit-remaining': String(remaining),
          'x-ratelimit-reset': String(resetS),
        }
      : {}
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
      const perWindow = Array.from({ length: windows }, (_, i) => {
        const quota = quotaAt(i * windowMs)
        const arrived = used.get(i) ?? 0
        return { quota, served: Math.min(arrived, quota), refused: Math.max(0, arrived - quota) }
      })
      const quota = perWindow.reduce((sum, w) => sum + w.quota, 0)
      return { requests: served + refused, served, refused, quota, windows: perWindow }
    },
    async close() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
