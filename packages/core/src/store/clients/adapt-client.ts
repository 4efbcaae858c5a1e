import type { ClientAdapter } from './client-adapter.js'
import { glideAdapter } from './glide.js'
import { isGlide, type ValkeyGlideClient } from './glide-client.js'
import { type IoredisClient, ioredisAdapter, isIoredis } from './ioredis.js'
import { isNodeRedisClient, type NodeRedisClient, nodeRedisClientAdapter } from './node-redis.js'
import { isNodeRedisCluster, type NodeRedisCluster, nodeRedisClusterAdapter } from './node-redis-cluster.js'

// Core's declarations of the clients redisStore accepts are structural: they need neither ioredis (nor iovalkey,
// its fork, taken as ioredis), redis nor @valkey/valkey-glide to be installed, and nothing here loads any at run time.

/** What `redisStore(client)` accepts. */
export type RedisStoreClient = IoredisClient | NodeRedisClient | NodeRedisCluster | ValkeyGlideClient

const adapters = new WeakMap<object, ClientAdapter>()

/** The adapter of a supported client (one per client), or undefined when it is none. */
export function adaptClient(client: unknown): ClientAdapter | undefined {
  if (typeof client !== 'object' || client === null) return undefined
  let adapter = adapters.get(client)
  if (!adapter) {
    adapter = isIoredis(client)
      ? ioredisAdapter(client)
      : isNodeRedisCluster(client)
        ? nodeRedisClusterAdapter(client)
        : isNodeRedisClient(client)
          ? nodeRedisClientAdapter(client)
          : isGlide(client)
            ? glideAdapter(client)
            : undefined
    if (!adapter) return undefined
    adapters.set(client, adapter)
  }
  return adapter
}

export type { IoredisClient, NodeRedisClient, NodeRedisCluster, ValkeyGlideClient }
