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
 * kind opens one client per test file (see useStoreClients), and isolates each store with a unique prefix.
 */
const clients = new Map<string, TestClient>()
// A kind with no `open` (GLIDE, whose createClient resolves once connected) gets its client in a suite's before hook.
const connected = new Map<string, TestClient>()

/**
 * In the calling suite: connects the clients that cannot connect on demand (GLIDE's) before its tests, and closes
 * every client its stores opened after them. Each file that uses storeKinds calls it, so a file holds its own
 * clients on its own server, whether the files run one after the other or in parallel workers.
 */
export function useStoreClients(): void {
  before(async () => {
    for (const kind of clientKinds) if (!kind.open) connected.set(kind.name, await kind.connect(redisUrl()))
  })
  after(closeStoreClients)
}

export const storeKinds: readonly StoreKind[] = [
  { name: 'memoryStore', make: () => memoryStore() },
  ...clientKinds.map(
    (kind): StoreKind => ({
      name: kind.name === 'ioredis' ? 'redisStore' : `redisStore (${kind.name})`,
      make: () => {
        let client = clients.get(kind.name) ?? connected.get(kind.name)
        if (!client) {
          if (!kind.open) throw new Error(`${kind.name}: its client is connected by useStoreClients() before the tests`)
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

async function closeStoreClients(): Promise<void> {
  const open = [...clients.values(), ...connected.values()]
  clients.clear()
  connected.clear()
  await Promise.all(open.map((client) => client.close()))
}
