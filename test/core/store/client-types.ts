// Type-level tests, checked by `pnpm lint` (tsc) rather than run: redisStore's parameter, a structural type that
// names neither library, accepts each client it supports as its library types it, and refuses other objects.
import { redisStore } from '@fleetlimit/core'
import { GlideClient, GlideClusterClient } from '@valkey/valkey-glide'
import { Cluster, Redis } from 'ioredis'
import { Redis as LowestRedis } from 'ioredis-lowest'
import { Cluster as IovalkeyCluster, Redis as IovalkeyRedis } from 'iovalkey'
import { createClient, createClientPool, createCluster, createSentinel } from 'redis'
import { createClient as createClient5, createCluster as createCluster5 } from 'redis-5'

const rootNodes = [{ url: 'redis://127.0.0.1:7000' }]
const addresses = [{ host: '127.0.0.1', port: 7000 }]

export const accepted = async () => [
  redisStore(await GlideClient.createClient({ addresses })),
  redisStore(await GlideClusterClient.createClient({ addresses })),
  redisStore(new IovalkeyRedis({ lazyConnect: true })),
  redisStore(new IovalkeyCluster([{ port: 7000 }], { lazyConnect: true })),
  redisStore(new Redis({ lazyConnect: true })),
  redisStore(new Cluster([{ port: 7000 }], { lazyConnect: true })),
  redisStore(new LowestRedis({ lazyConnect: true })),
  redisStore(createClient()),
  redisStore(createClient({ RESP: 2 })),
  redisStore(createCluster({ rootNodes })),
  redisStore(createClient5()),
  redisStore(createClient5({ RESP: 3 })),
  redisStore(createCluster5({ rootNodes })),
]

export const refused = () => [
  // @ts-expect-error not a client
  redisStore({}),
  // @ts-expect-error a node-redis sentinel takes other sendCommand arguments
  redisStore(createSentinel({ name: 'mymaster', sentinelRootNodes: [{ port: 26379 }] })),
  // @ts-expect-error a node-redis pool is not a client (refused at run time too: test/core/store/node-redis.test.ts)
  redisStore(createClientPool()),
]
