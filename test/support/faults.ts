import { once } from 'node:events'
import type { Decision, RateLimiter } from '@fleetlimit/core'
import { type RedisServer, startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { Redis } from 'ioredis'

/** How a decision that could not use the store was answered (the limiter's storeError event says). */
export type FailureKind = 'error' | 'timeout' | 'short-circuit'

/**
 * What a batch of decisions did: the decisions made, the errors thrown, and how many decisions failed each way:
 * 'timeout' (answered by the deadline), 'short-circuit' (not sent: breaker open or client disconnected), or
 * 'error' (the store or client answered with an error).
 */
export interface Batch {
  readonly decisions: Decision[]
  readonly errors: unknown[]
  readonly failures: Readonly<Record<FailureKind, number>>
}

/** Makes `count` decisions, `concurrency` at a time, on one key. */
export async function decideMany(limiter: RateLimiter, count: number, concurrency = 10): Promise<Batch> {
  const decisions: Decision[] = []
  const errors: unknown[] = []
  const failures: Record<FailureKind, number> = { error: 0, timeout: 0, 'short-circuit': 0 }
  const off = limiter.on('storeError', (_error, kind) => failures[kind]++)
  let left = count
  const worker = async () => {
    while (left-- > 0) {
      try {
        decisions.push(await limiter.consume('tenant'))
      } catch (error) {
        errors.push(error)
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  off()
  return { decisions, errors, failures }
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
