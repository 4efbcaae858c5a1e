import { definePolicy, memoryStore, redisStore, type Store } from '@fleetlimit/core'
import { Redis } from 'ioredis'

/** Every client: 100 requests a minute across the whole API. */
export const globalPolicy = definePolicy({ name: 'global', limit: 100, window: '1m', scope: 'tenant' })

/** Search is expensive: 5 requests per 10 seconds, on top of the global quota. */
export const searchPolicy = definePolicy({ name: 'search', limit: 5, window: '10s' })

/** Redis when REDIS_URL is set (the limit then holds for every process of the fleet), else the memory store. */
export function storeFromEnv(): { store: Store; label: string; close(): Promise<void> } {
  const url = process.env.REDIS_URL
  if (!url) return { store: memoryStore(), label: 'the in-memory store', close: async () => {} }
  const redis = new Redis(url)
  return { store: redisStore(redis), label: `Redis at ${url}`, close: async () => void (await redis.quit()) }
}

export const port = () => Number(process.env.PORT ?? 3000)
