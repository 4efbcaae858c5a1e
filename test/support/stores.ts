import { memoryStore, redisStore, type Store } from '@fleetlimit/core'
import { clientKinds, redisClient, type TestClient, uniquePrefix } from './redis.js'
import { redisUrl } from './root-hooks.js'

export interface StoreKind {
  readonly name: string
  /** A fresh, empty store of this kind. */
  make(): Store
}

/**
 * The stores every conformance suite runs against: memory, and Redis through each client library. Each Redis
 * kind opens one client for the whole run (closed by `closeStoreClients`), and isolates each store with a unique
 * prefix.
 */
const clients = new Map<string, TestClient>()
export const storeKinds: readonly StoreKind[] = [
  { name: 'memoryStore', make: () => memoryStore() },
  ...clientKinds.map(
    (kind): StoreKind => ({
      name: kind.name === 'ioredis' ? 'redisStore' : `redisStore (${kind.name})`,
      make: () => {
        let client = clients.get(kind.name)
        if (!client) {
          client = kind.name === 'ioredis' ? ioredisClient() : kind.open(redisUrl())
          clients.set(kind.name, client)
        }
        return redisStore(client.client, { prefix: uniquePrefix() })
      },
    }),
  ),
]

function ioredisClient(): TestClient {
  const client = redisClient()
  const unused = () => Promise.reject(new Error('not used by the store suites'))
  return { client, nextReady: unused, nextError: unused, units: unused, close: () => client.quit() }
}

export async function closeStoreClients(): Promise<void> {
  const open = [...clients.values()]
  clients.clear()
  await Promise.all(open.map((client) => client.close()))
}
