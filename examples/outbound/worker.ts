// One worker process: calls the upstream through limitedFetch as fast as it may, one request at a time, until
// told to stop. Started by app.ts with fork(); talks to it over IPC.
import { once } from 'node:events'
import { createRateLimiter, limitedFetch, type OutboundLimiter, redisStore } from '@fleetlimit/core'
import { Redis } from 'ioredis'

export interface WorkerConfig {
  readonly worker: number
  readonly redisUrl: string
  readonly prefix: string
  readonly upstreamUrl: string
  readonly limit: number
  readonly windowMs: number
}

export type WorkerMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'pause'; readonly worker: number; readonly ms: number }
  | { readonly type: 'done'; readonly worker: number; readonly responses: number; readonly errors: number }

const send = (message: WorkerMessage) =>
  new Promise<void>((resolve, reject) => process.send?.(message, undefined, {}, (e) => (e ? reject(e) : resolve())))

process.once('message', async (config: WorkerConfig) => {
  const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 1 })
  // Every worker builds the same limiter on the same Redis: one quota for the whole fleet.
  const limiter = createRateLimiter({
    store: redisStore(redis, { prefix: config.prefix }),
    limit: config.limit,
    window: config.windowMs,
    name: 'upstream',
    // A background caller can give Redis longer than a request path would (the default is 100 ms).
    timeoutMs: 500,
  })
  // The limiter as limitedFetch sees it, telling the run when this worker pauses the fleet.
  const reporting: OutboundLimiter = {
    acquire: (key, options) => limiter.acquire(key, options),
    async pause(key, ms) {
      await limiter.pause(key, ms)
      await send({ type: 'pause', worker: config.worker, ms: Number(ms) })
    },
  }
  // transitMs: a wrapper is not a limiter limitedFetch can look into, so the default transit is given explicitly.
  const upstream = limitedFetch(reporting, { key: 'api.upstream.test', maxWaitMs: '10s', transitMs: '100ms' })

  if (redis.status !== 'ready') await once(redis, 'ready')
  await (await fetch(`${config.upstreamUrl}/warmup`)).arrayBuffer()
  await send({ type: 'ready' })
  await new Promise((resolve) => process.once('message', resolve))

  // 'stop' aborts the call in progress: its wait for the quota, or the request itself.
  const stop = new AbortController()
  process.once('message', () => stop.abort(new Error('stopped')))
  const headers = { 'x-worker': String(config.worker) }
  let responses = 0
  let errors = 0
  while (!stop.signal.aborted) {
    try {
      const response = await upstream(`${config.upstreamUrl}/work`, { headers, signal: stop.signal })
      await response.arrayBuffer()
      responses++
    } catch (error) {
      if (!stop.signal.aborted) {
        errors++
        console.error(`worker ${config.worker}:`, error)
      }
    }
  }
  await send({ type: 'done', worker: config.worker, responses, errors })
  await redis.quit()
  process.disconnect()
})
