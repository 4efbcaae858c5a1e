import { memoryStore, redisStore, type Store } from '@fleetlimit/core'
import type { Redis } from 'ioredis'
import { redisClient, uniquePrefix } from './redis.js'

/**
 * The stores an adapter test runs on: the memory store, and Redis on one ioredis client that is opened on first
 * use and closed after the enclosing describe. Call it inside a describe.
 */
export function adapterStores(): readonly { readonly name: string; make(): Store }[] {
  let redis: Redis | undefined
  after(() => redis?.quit())
  return [
    { name: 'memory store', make: () => memoryStore() },
    {
      name: 'Redis',
      make: () => {
        redis ??= redisClient()
        return redisStore(redis, { prefix: uniquePrefix() })
      },
    },
  ]
}
