import { once } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A real HTTP upstream on 127.0.0.1: its n-th request (from 1) is handled by `handle(n, req, res)`. */
export async function startHttpStub(handle: (n: number, req: IncomingMessage, res: ServerResponse) => void) {
  let received = 0
  const server = createServer((req, res) => {
    req.resume()
    handle(++received, req, res)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received: () => received,
    async close() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}
