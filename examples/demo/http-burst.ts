import type { AddressInfo } from 'node:net'
import { memoryStore, type Store } from '@fleetlimit/core'
import { createApp } from '../express-basic/app.js'

export interface HttpExchange {
  readonly status: number
  readonly headers: Record<string, string>
}

const SHOWN = ['ratelimit-policy', 'ratelimit', 'retry-after']

/** Starts the express-basic example on `store`, on a free port of 127.0.0.1, and sends `count` requests to /search. */
export async function httpBurst(count: number, store: Store = memoryStore()): Promise<HttpExchange[]> {
  const server = createApp(store).listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  const { port } = server.address() as AddressInfo
  try {
    const exchanges: HttpExchange[] = []
    for (let i = 0; i < count; i++) {
      const response = await fetch(`http://127.0.0.1:${port}/search?q=fleet`)
      await response.arrayBuffer()
      const headers = Object.fromEntries(
        SHOWN.flatMap((name) => {
          const value = response.headers.get(name)
          return value === null ? [] : [[name, value]]
        }),
      )
      exchanges.push({ status: response.status, headers })
    }
    return exchanges
  } finally {
    server.close()
  }
}
