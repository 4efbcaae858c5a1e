// Bottleneck in clustering mode, as its README sets it up: maxConcurrent for the calls in flight, a reservoir
// refilled to the limit every window for the rate, and an expiration on every job so a crashed process's jobs
// leave the cluster's count. Bottleneck opens its own ioredis clients from clientOptions.
import Bottleneck from 'bottleneck'
import type { CreateGate } from './in-flight-peers.js'

export const createGate: CreateGate = async ({ redisUrl, key, concurrency, limit, windowMs, onError }) => {
  const { hostname, port } = new URL(redisUrl)
  const limiter = new Bottleneck({
    id: key,
    datastore: 'ioredis',
    clientOptions: { host: hostname, port: Number(port) },
    maxConcurrent: concurrency,
    reservoir: limit,
    reservoirRefreshAmount: limit,
    reservoirRefreshInterval: windowMs,
  })
  limiter.on('error', onError)
  await limiter.ready()
  return {
    run: (call) => limiter.schedule({ expiration: 30_000 }, call),
    close: () => limiter.disconnect(),
  }
}
