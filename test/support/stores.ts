import { memoryStore, redisStore, type Store } from '@fleetlimit/core'
import type { Redis } from 'ioredis'
import { redisClient, uniquePrefix } from './redis.js'

export interface StoreKind {
  readonly name: string
  /** A fresh, empty store of this kind. */
  make(): Store
}

/**
 * The stores every conformance suite runs against. The Redis kind opens one client for the whole
 * run (closed by `closeStoreClients`), and isolates each store with a unique prefix.
 */
let client: Redis | undefined
export const storeKinds: readonly StoreKind[] = [
  { name: 'memoryStore', make: () => memoryStore() },
  {
    name: 'redisStore',
    make: () => {
      client ??= redisClient()
      return redisStore(client, { prefix: uniquePrefix() })
    },
  },
]

export async function closeStoreClients(): Promise<void> {
  await client?.quit()
  client = undefined
}
