// A stub of a third-party API with a quota of its own: `quota` requests in any `windowMs` (a sliding window,
// counted on arrival), answered 429 with Retry-After beyond it. tighten() makes it stricter for a while, as
// real upstreams do under load: the next request gets 429 with Retry-After, and every request is refused until
// that time has passed.
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface UpstreamOptions {
  readonly quota: number
  readonly windowMs: number
}

/** One request as the upstream saw it: when (performance.now()), from which worker, and its answer. */
export interface Arrival {
  readonly at: number
  readonly worker: string
  readonly status: 200 | 429
}

export interface Upstream {
  readonly url: string
  /** Every request on /work, in order of arrival. */
  readonly arrivals: readonly Arrival[]
  /** Answers the next request 429 with Retry-After: `seconds`, and refuses every request for that long. */
  tighten(seconds: number): void
  close(): Promise<void>
}

export async function startUpstream({ quota, windowMs }: UpstreamOptions): Promise<Upstream> {
  const arrivals: Arrival[] = []
  // Arrival times of the requests admitted within the last window, oldest first.
  let admitted: number[] = []
  let tightenFor = 0
  let closedUntil = 0

  /** The answer to a request arriving at `at`: 200, or 429 with the whole seconds to wait. */
  function decide(at: number): { status: 200 } | { status: 429; retryAfter: number } {
    if (tightenFor > 0) {
      closedUntil = at + tightenFor * 1_000
      tightenFor = 0
    }
    if (at < closedUntil) return { status: 429, retryAfter: Math.ceil((closedUntil - at) / 1_000) }
    admitted = admitted.filter((t) => t > at - windowMs)
    if (admitted.length >= quota) {
      // Room comes back when the oldest admission that keeps the count at the quota leaves the window.
      const leaves = (admitted[admitted.length - quota] as number) + windowMs
      return { status: 429, retryAfter: Math.ceil((leaves - at) / 1_000) }
    }
    admitted.push(at)
    return { status: 200 }
  }

  const server = createServer((req, res) => {
    // The workers' first request, before the run: it sets their connections up and is not counted.
    if (req.url === '/warmup') return void res.writeHead(204).end()
    const at = performance.now()
    const answer = decide(at)
    arrivals.push({ at, worker: String(req.headers['x-worker'] ?? '?'), status: answer.status })
    if (answer.status === 200) res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n')
    else res.writeHead(429, { 'retry-after': String(answer.retryAfter) }).end('too many requests\n')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')

  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrivals,
    tighten(seconds) {
      tightenFor = seconds
    },
    async close() {
      // The workers' keep-alive connections would hold close() open.
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
