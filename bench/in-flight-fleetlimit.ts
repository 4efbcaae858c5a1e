// fleetlimit's gate for the in-flight part: one limiter per process with the scenario's policies (calls per
// window, unless the scenario has no rate, and calls in flight), decided in one script call; acquire() before the
// call, release() after it. A redisUrl of `cluster:<host:port>,...` runs it on a Redis Cluster.
import { createRateLimiter, definePolicy, type Policy, redisStore } from '@fleetlimit/core'
import { Cluster, Redis } from 'ioredis'
import type { CreateGate } from './in-flight-peers.js'

/** A scenario limit this high means no rate limit: the in-flight policy alone. */
export const NO_RATE = 1_000_000_000

/**
 * The upstream counts a call when it arrives, a few ms after the decision, and arrivals bunch up in transit: the
 * rate policy's window is this much longer than the upstream's, as docs/outbound.md advises.
 */
export const TRANSIT_MARGIN_MS = 100

export const createGate: CreateGate = async ({ redisUrl, key, concurrency, limit, windowMs }) => {
  const client = redisUrl.startsWith('cluster:')
    ? new Cluster(
        redisUrl
          .slice('cluster:'.length)
          .split(',')
          .map((seed) => `redis://${seed}`),
      )
    : new Redis(redisUrl)
  // A deadline that a busy 2-core machine running 4 workers and Redis keeps.
  const timeoutMs = 1_000
  const policies: Policy[] = [definePolicy({ name: 'in-flight', concurrency, timeoutMs })]
  if (limit < NO_RATE)
    policies.unshift(definePolicy({ name: 'calls', limit, window: windowMs + TRANSIT_MARGIN_MS, timeoutMs }))
  const limiter = createRateLimiter({ store: redisStore(client, { prefix: key }), policies })
  await limiter.peek('upstream')
  return {
    async run(call) {
      const decision = await limiter.acquire('upstream')
      try {
        return await call()
      } finally {
        await limiter.release(decision)
      }
    },
    async close() {
      await client.quit()
    },
  }
}
