// One gateway process on Redis: started by app.ts with fork(); talks to it over IPC (its config, then 'go', then
// 'stop'; it answers 'ready', what its limiter learns, and 'done').
import { once } from 'node:events'
import { redisStore } from '@fleetlimit/core'
import { Redis } from 'ioredis'
import { createGateway, type Done, type GatewayConfig, type Learned } from './gateway.js'

export interface WorkerConfig extends GatewayConfig {
  readonly redisUrl: string
  readonly prefix: string
}

export type WorkerMessage = { readonly type: 'ready' } | Learned | Done

const send = (message: WorkerMessage) =>
  new Promise<void>((resolve, reject) => process.send?.(message, undefined, {}, (e) => (e ? reject(e) : resolve())))

process.once('message', async (config: WorkerConfig) => {
  const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 1 })
  const gateway = createGateway(config, redisStore(redis, { prefix: config.prefix }), (learned) => {
    send(learned).catch(() => {})
  })
  if (redis.status !== 'ready') await once(redis, 'ready')
  await gateway.connect()
  await send({ type: 'ready' })
  await new Promise((resolve) => process.once('message', resolve))
  const stop = new AbortController()
  process.once('message', () => stop.abort(new Error('stopped')))
  await send(await gateway.run(stop.signal))
  await redis.quit()
  process.disconnect()
})
