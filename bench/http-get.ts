import { Agent, request } from 'node:http'
import { wallNow } from './limiter-servers.js'

/** One request as its client saw it: when it was sent and when its response ended (epoch ms), and its status. */
export interface Exchange {
  readonly sent: number
  readonly done: number
  readonly status: number
}

/**
 * Keep-alive connections to one local server. `open()` sets up `sockets` of them before a timed run and warms
 * the limited path on another key, so the run measures neither connection set-up nor cold code.
 */
export function httpClient(port: number, sockets: number) {
  const agent = new Agent({ keepAlive: true, maxSockets: sockets })
  const get = (path: string, key?: string) =>
    new Promise<Exchange>((resolve, reject) => {
      const sent = wallNow()
      request({ host: '127.0.0.1', port, path, agent, headers: key === undefined ? {} : { 'x-key': key } }, (res) => {
        res.resume()
        res.once('end', () => resolve({ sent, done: wallNow(), status: res.statusCode ?? 0 }))
      })
        .once('error', reject)
        .end()
    })
  return {
    get,
    open: async () => {
      await Promise.all(Array.from({ length: sockets }, () => get('/health')))
      for (let i = 0; i < 2; i++) await Promise.all(Array.from({ length: sockets }, () => get('/', 'warm-up')))
    },
    close: () => agent.destroy(),
  }
}
