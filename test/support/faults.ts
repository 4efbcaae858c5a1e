import { once } from 'node:events'
import type { Decision, RateLimiter } from '@fleetlimit/core'
import { type RedisServer, startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { Redis } from 'ioredis'

/** What a batch of decisions did: the decisions made, the errors thrown, and the slowest one, in ms. */
export interface Batch {
  readonly decisions: Decision[]
  readonly errors: unknown[]
  readonly slowestMs: number
}

/** Makes `count` decisions, `concurrency` at a time, on one key. */
export async function decideMany(limiter: RateLimiter, count: number, concurrency = 10): Promise<Batch> {
  const decisions: Decision[] = []
  const errors: unknown[] = []
  let slowestMs = 0
  let left = count
  const worker = async () => {
    while (left-- > 0) {
      const started = performance.now()
      try {
        decisions.push(await limiter.consume('tenant'))
      } catch (error) {
        errors.push(error)
      }
      slowestMs = Math.max(slowestMs, performance.now() - started)
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return { decisions, errors, slowestMs }
}

/** Counts every event a limiter emits. */
export function countEvents(limiter: RateLimiter) {
  const counts = { storeError: 0, degraded: 0, breakerOpen: 0, breakerClose: 0 }
  limiter.on('storeError', () => counts.storeError++)
  limiter.on('degraded', () => counts.degraded++)
  limiter.on('breakerOpen', () => counts.breakerOpen++)
  limiter.on('breakerClose', () => counts.breakerClose++)
  return counts
}

/** An ioredis client with the default options, as most users have it; errors are expected here, not printed. */
export async function defaultClient(url: string): Promise<Redis> {
  const client = new Redis(url)
  client.on('error', () => {})
  if (client.status !== 'ready') await once(client, 'ready')
  return client
}

/** Resolves on the client's next 'ready' (after a reconnect). */
export const nextReady = (client: Redis) => once(client, 'ready')

/**
 * The bound on any one decision while the store is failing: the deadline plus a generous allowance for a
 * loaded two-core machine. It tells "bounded by the deadline" from "hung on ioredis" (seconds); the real
 * figures are measured by bench/, not asserted here.
 */
export const boundMs = (timeoutMs: number) => timeoutMs + 400

/**
 * A redis-server of its own and a default client for each test of the calling suite (mocha hooks), thawed and
 * stopped after it: read them as `redis.server` and `redis.client`; a test may replace the server (a restart).
 */
export function serverPerTest(): { server: RedisServer; client: Redis } {
  const current = {} as { server: RedisServer; client: Redis }
  beforeEach(async () => {
    current.server = await startRedisServer()
    current.client = await defaultClient(current.server.url)
  })
  afterEach(async () => {
    current.server.thaw()
    current.client.disconnect()
    await current.server.stop()
  })
  return current
}
