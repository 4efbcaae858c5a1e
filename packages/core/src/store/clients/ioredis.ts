import { once } from '../../common/once.js'
import { createWeakSignal } from '../../common/weak-signal.js'
import { clusterSlot } from '../cluster-slot.js'
import type { ClientAdapter, ConnectionWatch, Listener } from './client-adapter.js'
import { createOutagePrinter } from './outage-printer.js'
import { createSubscriptions, onReadyAgain, type Subscriber } from './subscriptions.js'

/** An ioredis `Redis` or `Cluster`, as fleetlimit uses it. */
export interface IoredisClient {
  readonly status: string
  readonly isCluster?: boolean
  /** A Cluster's slot map: each slot's nodes, its master first. */
  readonly slots?: readonly (readonly string[] | undefined)[]
  call(command: string, ...args: (string | Uint8Array | number)[]): Promise<unknown>
  callBuffer(command: string, ...args: (string | Uint8Array | number)[]): Promise<unknown>
  del(key: string): Promise<number>
  on(event: string, listener: Listener): unknown
  listenerCount(event: string): number
}

type Candidate = Partial<Record<string, unknown>>

export function isIoredis(client: object): client is IoredisClient {
  const c = client as Candidate
  return (
    typeof c.call === 'function' &&
    typeof c.callBuffer === 'function' &&
    typeof c.del === 'function' &&
    typeof c.status === 'string'
  )
}

// ioredis states in which a command would wait in the offline queue for a connection that was lost.
const DISCONNECTED = new Set(['reconnecting', 'close', 'end', 'disconnecting'])

export function ioredisAdapter(client: IoredisClient): ClientAdapter {
  const cluster = client.isCluster ? client : undefined
  return {
    library: 'ioredis',
    cluster: cluster !== undefined,
    evaluate: (command, script, keys, args, binary) =>
      binary
        ? client.callBuffer(command, script, keys.length, ...keys, ...args)
        : client.call(command, script, keys.length, ...keys, ...args),
    del: async (key) => {
      await client.del(key)
    },
    // ioredis's own slot map: the slot is the tenant's hash tag's, so the prefix (which holds no brace) needs none.
    serverOf: cluster ? (key) => cluster.slots?.[clusterSlot(key)]?.[0] ?? '' : () => '',
    watch: once(() => watchIoredis(client)),
    publish: async (channel, message) => {
      await client.call('PUBLISH', channel, message)
    },
    subscribe: createSubscriptions(() => ioredisSubscriber(client)),
  }
}

/** Listening for errors stops ioredis's own "Unhandled error event" print: outages are printed here instead. */
function watchIoredis(client: IoredisClient): ConnectionWatch {
  let last: unknown
  let readyAt = client.status === 'ready' ? performance.now() : undefined
  const printer = createOutagePrinter(client, 'ioredis')
  const readiness = createWeakSignal<[]>()
  client.on('error', (error: unknown) => {
    last = error
    printer.error(error)
  })
  client.on('ready', () => {
    readyAt = performance.now()
    last = undefined
    printer.ready()
    readiness.emit()
  })
  // Before the first connection ('wait', 'connecting') a command is sent, bounded by the limiter's deadline; not
  // while ioredis retries a connection: each attempt would queue it too. Its retry count (a field its types keep
  // private, 0 once ready) tells the two apart.
  const retrying = () => Number((client as { retryAttempts?: unknown }).retryAttempts ?? 0) > 0
  const connected = () => client.status === 'ready' || (!DISCONNECTED.has(client.status) && !retrying())
  return {
    connected,
    readySince: () => {
      if (client.status === 'ready') return readyAt
      return readyAt === undefined && connected() ? Number.POSITIVE_INFINITY : undefined
    },
    lastError: () => last,
    onReady: readiness.add,
  }
}

/** What fleetlimit uses of an ioredis subscriber (a duplicate of the user's client). */
interface IoredisSubscriber {
  readonly status: string
  on(event: string, listener: Listener): unknown
  connect(): Promise<unknown>
  subscribe(channel: string): Promise<unknown>
  disconnect(): void
}

// How soon a subscriber that lost its connection while the user's client kept its own connects again.
const SUBSCRIBER_RECONNECT_MS = 100

/**
 * The subscriber never reconnects by itself (ioredis's own retries would outlive a client closed while it was
 * reconnecting, which says nothing): it connects again when the user's client is ready again, or shortly after
 * losing its connection while the client is ready, and subscribes anew.
 */
function ioredisSubscriber(client: IoredisClient): Subscriber | undefined {
  const duplicate = (client as { duplicate?: (...args: unknown[]) => IoredisSubscriber }).duplicate
  if (typeof duplicate !== 'function' || client.status === 'end') return undefined
  if (client.isCluster) return ioredisClusterSubscriber(duplicate.call(client), client)
  const sub = duplicate.call(client, { retryStrategy: () => null })
  // The user's client reports an outage: the subscriber's errors would say it again.
  sub.on('error', () => {})
  const channels: string[] = []
  let closed = false
  client.on('end', () => {
    closed = true
    sub.disconnect()
  })
  return {
    listen(deliver, missed) {
      sub.on('message', (channel: unknown, message: unknown) => deliver(String(channel), String(message)))
      const reconnect = () => {
        if (closed || sub.status !== 'end') return
        sub
          .connect()
          .then(() => Promise.all(channels.map((channel) => sub.subscribe(channel))))
          .then(missed, () => {})
      }
      client.on('ready', reconnect)
      sub.on('end', () => {
        if (client.status === 'ready') setTimeout(reconnect, SUBSCRIBER_RECONNECT_MS).unref()
      })
    },
    add: (channel) => {
      channels.push(channel)
      return sub.subscribe(channel).then(() => {})
    },
  }
}

/**
 * A Cluster's subscriber: a duplicate Cluster, whose own subscriber connection (to one node: a message published on
 * any node reaches every node) moves and subscribes again by itself; it ends with the user's cluster.
 */
function ioredisClusterSubscriber(sub: IoredisSubscriber, client: IoredisClient): Subscriber {
  sub.on('error', () => {})
  sub.on('node error', () => {})
  client.on('end', () => sub.disconnect())
  return {
    listen(deliver, missed) {
      sub.on('message', (channel: unknown, message: unknown) => deliver(String(channel), String(message)))
      onReadyAgain(sub, missed)
    },
    add: (channel) => sub.subscribe(channel).then(() => {}),
  }
}
