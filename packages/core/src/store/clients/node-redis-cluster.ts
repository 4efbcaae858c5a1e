import { once } from '../../common/once.js'
import { createWeakSignal } from '../../common/weak-signal.js'
import { clusterSlot } from '../cluster-slot.js'
import type { ClientAdapter, ConnectionWatch } from './client-adapter.js'
import {
  BINARY,
  type Candidate,
  createWriteWatch,
  DEFAULT,
  evalArgs,
  isNodeRedis,
  type NodeRedisCommandOptions,
  type NodeRedisEmitter,
} from './node-redis-commands.js'
import { createOutagePrinter } from './outage-printer.js'
import { asIoredisError } from './reply-errors.js'

/** A node-redis (5, 6) cluster, as `createCluster()` makes it. */
export interface NodeRedisCluster extends NodeRedisEmitter {
  readonly isOpen: boolean
  /** node-redis 6: true once the slots are known. */
  readonly isReady?: boolean
  readonly masters: readonly unknown[]
  readonly slots: readonly ({ readonly master: { readonly address: string } } | undefined)[]
  sendCommand(
    firstKey: string | undefined,
    isReadonly: boolean | undefined,
    args: readonly (string | Uint8Array)[],
    options?: NodeRedisCommandOptions,
  ): Promise<unknown>
}

export function isNodeRedisCluster(client: object): client is NodeRedisCluster {
  const c = client as Candidate
  return isNodeRedis(client) && Array.isArray(c.masters) && Array.isArray(c.slots)
}

/** What subscribe() answers where no subscriber can be made: a rejection already handled, so ignoring it is safe. */
const NO_SUBSCRIBER = Promise.reject(new Error('no subscriber on a node-redis cluster'))
NO_SUBSCRIBER.catch(() => {})

export function nodeRedisClusterAdapter(cluster: NodeRedisCluster): ClientAdapter {
  const writes = createWriteWatch()
  // Routed by the first key, as ioredis does; node-redis follows MOVED and ASK itself.
  const send = async (key: string | undefined, args: (string | Buffer)[], options: NodeRedisCommandOptions) => {
    try {
      writes.sent()
      return await cluster.sendCommand(key, false, args, options)
    } catch (error) {
      throw asIoredisError(error)
    }
  }
  return {
    library: 'node-redis',
    cluster: true,
    evaluate: (command, script, keys, args, binary) =>
      send(keys[0], evalArgs(command, script, keys, args), binary ? BINARY : DEFAULT),
    del: async (key) => {
      await send(key, ['DEL', key], DEFAULT)
    },
    serverOf: (key) => cluster.slots[clusterSlot(key)]?.master.address ?? '',
    watch: once(() => watchNodeRedisCluster(cluster, writes.heldUntil)),
    publish: async (channel, message) => {
      await send(undefined, ['PUBLISH', channel, message], DEFAULT)
    },
    // A cluster's subscriber would need its own life cycle per node: resets reach other processes' local tiers
    // on a single server only (README, the local tier).
    subscribe: () => NO_SUBSCRIBER,
  }
}

/**
 * A node-redis cluster is connected once its slots are known (6: `isReady`; 5: open, with its masters known). Each master's
 * own connection is behind its breaker: a dead master's calls miss their deadline, as on ioredis.
 */
function watchNodeRedisCluster(cluster: NodeRedisCluster, heldUntil: () => number): ConnectionWatch {
  let last: unknown
  // node-redis 5 opens (isOpen) before it knows the slots; it fills `masters` as it fills them.
  const ready = () => cluster.isReady ?? (cluster.isOpen && cluster.masters.length > 0)
  let readyAt = ready() ? performance.now() : undefined
  const printer = createOutagePrinter(cluster, 'node-redis')
  const readiness = createWeakSignal<[]>()
  cluster.on('error', (error: unknown) => {
    last = asIoredisError(error)
    printer.error(error)
  })
  // node-redis 6 says 'connect' once the slots are known; 5 says nothing, so readiness is noted when first seen.
  cluster.on('connect', () => {
    readyAt = performance.now()
    last = undefined
    printer.ready()
    readiness.emit()
  })
  const connected = () => {
    const now = ready()
    if (now) readyAt ??= performance.now()
    return now
  }
  return {
    connected,
    readySince: () => (connected() && readyAt !== undefined ? Math.max(readyAt, heldUntil()) : undefined),
    lastError: () => last,
    onReady: readiness.add,
  }
}
