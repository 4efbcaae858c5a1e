// redis-semaphore's Semaphore, as its README uses it: one per call on the shared key, acquired before the call
// and released after it, on one ioredis client per process. It has no rate limit: it enforces the calls in
// flight alone. Its defaults, but for acquireTimeout (10 s): raised so no task fails for its place in the queue.
import { Redis } from 'ioredis'
import { Semaphore } from 'redis-semaphore'
import type { CreateGate } from './in-flight-peers.js'

export const createGate: CreateGate = async ({ redisUrl, key, concurrency, onError }) => {
  const client = new Redis(redisUrl)
  await client.ping()
  return {
    async run(call) {
      const semaphore = new Semaphore(client, key, concurrency, { acquireTimeout: 120_000, onLockLost: onError })
      await semaphore.acquire()
      try {
        return await call()
      } finally {
        await semaphore.release()
      }
    },
    async close() {
      await client.quit()
    },
  }
}
