import { once } from 'node:events'
import { createServer, type OutgoingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'

// An upstream for limitedFetch's adapt tests: a real HTTP server on 127.0.0.1 that states a quota in its headers.

export interface Answer {
  readonly status: number
  readonly headers?: OutgoingHttpHeaders
}

/** A real HTTP upstream on 127.0.0.1: `answer(n)` for its n-th request (from 1); arrival times kept. */
export async function startStub(answer: (n: number) => Answer) {
  const arrivals: number[] = []
  const server = createServer((req, res) => {
    arrivals.push(performance.now())
    const { status, headers = {} } = answer(arrivals.length)
    req.resume()
    res.writeHead(status, headers).end('ok')
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrivals,
    async close() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

/** A quota stated in every answer: `q` per second, `r` left, reset in `t` s. */
export const quotaHeaders = (q: number, r: number, t = 1) => ({
  'ratelimit-policy': `"default";q=${q};w=1`,
  ratelimit: `"default";r=${r};t=${t}`,
})
