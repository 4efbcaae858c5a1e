// One replica of the accuracy part's fleet: serves one limiter over HTTP and sends its own steady load to
// it, then reports what it saw. Started by accuracy.ts with fork(); talks to it over IPC.
import { sleep } from '@fleetlimit/test-kit/sleep'
import { type Exchange, httpClient } from './http-get.js'
import { type LimitedServer, type LimiterId, startLimitedServer, wallNow } from './limiter-servers.js'

export type WorkerMessage =
  | { type: 'setup'; limiter: LimiterId; redisUrl: string; limit: number; windowMs: number }
  | { type: 'go'; startAt: number; durationMs: number; perSecond: number }

export interface WorkerReport {
  readonly exchanges: Exchange[]
  readonly admissions: number[]
  readonly handlerTimes: number[]
}

const send = (message: unknown) =>
  new Promise<void>((resolve, reject) => process.send?.(message, undefined, {}, (e) => (e ? reject(e) : resolve())))

let server: LimitedServer | undefined
let client: ReturnType<typeof httpClient> | undefined

process.on('message', async (message: WorkerMessage) => {
  if (message.type === 'setup') {
    server = await startLimitedServer(message.limiter, message)
    client = httpClient(server.port, 32)
    await client.open()
    server.forget()
    await send({ type: 'ready' })
  } else {
    if (!server || !client) throw new Error('go before setup')
    await sleep(message.startAt - wallNow())
    // Open loop: requests arrive at a steady rate whatever the answers, as from many independent clients.
    const exchanges: Promise<Exchange>[] = []
    const started = wallNow()
    while (wallNow() < started + message.durationMs) {
      const due = Math.floor(((wallNow() - started) * message.perSecond) / 1000)
      while (exchanges.length < due) {
        const sent = wallNow()
        exchanges.push(client.get('/').catch(() => ({ sent, done: wallNow(), status: 0 })))
      }
      await sleep(2)
    }
    const report: WorkerReport = {
      exchanges: await Promise.all(exchanges),
      admissions: server.admissions,
      handlerTimes: server.handlerTimes,
    }
    client.close()
    await server.close()
    await send({ type: 'done', ...report })
  }
})
