import { randomBytes } from 'node:crypto'
import type { redisStore } from '@fleetlimit/core'
import { logUnits } from '@fleetlimit/test-kit/log-units'
import { Decoder, GlideClient, GlideClusterClient, Logger } from '@valkey/valkey-glide'
import { Cluster, Redis } from 'ioredis'
import { Redis as Iovalkey, Cluster as IovalkeyCluster } from 'iovalkey'
import { createClient, createCluster } from 'redis'
import { createClient as createClient5, createCluster as createCluster5 } from 'redis-5'
import { adaptClient } from '../../packages/core/src/store/clients/adapt-client.js'
import { redisUrl } from './root-hooks.js'

// GLIDE's core logs every command that fails at warn level: the fault tests fail many on purpose.
Logger.setLoggerConfig('off')

/** A client of the test Redis; close it in an after hook. */
export function redisClient(): Redis {
  return new Redis(redisUrl(), { lazyConnect: false, maxRetriesPerRequest: 1 })
}

/** A key prefix no other test uses, so tests never need to flush a server they may not own. */
export function uniquePrefix(): string {
  return `fltest-${randomBytes(6).toString('hex')}`
}

/**
 * How many times a server ran each command since its last CONFIG RESETSTAT (a script's commands count too), read
 * through an ioredis client of that server.
 */
export async function commandCalls(admin: Redis): Promise<(command: string) => number> {
  const stats = await admin.info('commandstats')
  return (command) => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0)
}

/** Any client redisStore accepts. */
export type StoreClient = Parameters<typeof redisStore>[0]

/** Resolves on the emitter's next 'ready', whatever errors come first (events.once would reject on one). */
const nextReady = (emitter: { once(event: 'ready', listener: () => void): unknown }) =>
  new Promise<void>((resolve) => emitter.once('ready', resolve))

/** A connected client of one library, with what a test does to it beside handing it to redisStore. */
export interface TestClient {
  readonly client: StoreClient
  /** Resolves on the client's next 'ready' (after a reconnect). */
  nextReady(): Promise<unknown>
  /** Resolves on the client's next 'error'. */
  nextError(): Promise<unknown>
  /** The units of a sliding-log key (see logUnits), read on this client's connection: after what it sent before. */
  units(key: string): Promise<number>
  /** Closes the client; a promise when the library says when it is closed. */
  close(): unknown
}

/** A Redis client library redisStore supports, and how a user with the default options makes its clients. */
export interface ClientKind {
  readonly name: string
  /**
   * A client with the default options, connecting: commands sent meanwhile wait for the connection. None for GLIDE,
   * whose createClient resolves once connected.
   */
  readonly open?: (url: string) => TestClient
  /**
   * The same, once connected. `requestTimeoutMs`: how long a client that gives up on a call by itself (GLIDE)
   * waits for its reply; the others ignore it.
   */
  connect(url: string, options?: { readonly requestTimeoutMs?: number }): Promise<TestClient>
  /** A cluster client with the default options, connected to these nodes. */
  connectCluster(nodes: readonly { host: string; port: number }[]): Promise<TestClient>
}

interface NodeRedis {
  on(event: 'error', listener: () => void): unknown
  once(event: 'ready' | 'error', listener: (value?: unknown) => void): unknown
  connect(): Promise<unknown>
  destroy(): unknown
  isOpen: boolean
}

type Send = (key: string, args: string[], options: { typeMapping: Record<number, unknown> }) => Promise<unknown>
const sendOnClient =
  (client: { sendCommand(args: string[], options: object): Promise<unknown> }): Send =>
  (_key, args, options) =>
    client.sendCommand(args, options)
const sendOnCluster =
  (cluster: { sendCommand(key: string, readonly: boolean, args: string[], options: object): Promise<unknown> }): Send =>
  (key, args, options) =>
    cluster.sendCommand(key, false, args, options)

// logUnits reads with ioredis's getrangeBuffer: the same command through node-redis, a bulk string as a Buffer.
const asLogReader = (send: Send) =>
  ({
    getrangeBuffer: (key: string, start: number, end: number) =>
      send(key, ['GETRANGE', key, String(start), String(end)], { typeMapping: { 36: Buffer } }),
  }) as unknown as Redis

/** A node-redis client or cluster, connecting; errors are expected here, not printed. */
function openNodeRedis(client: NodeRedis, send: Send): TestClient & { readonly connected: Promise<unknown> } {
  client.on('error', () => {})
  const connected = client.connect()
  connected.catch(() => {})
  return {
    client: client as unknown as StoreClient,
    connected,
    nextReady: () => nextReady(client),
    nextError: () => new Promise((resolve) => client.once('error', resolve)),
    units: (key) => logUnits(asLogReader(send), key),
    // node-redis 5 throws when it is closed already (its reconnect strategy gave up, say).
    close: () => {
      if (client.isOpen) client.destroy()
    },
  }
}

function openIoredis(made: Redis | Cluster | Iovalkey | IovalkeyCluster): TestClient {
  // iovalkey's classes are ioredis's, renamed: typed as ioredis's here.
  const client = made as Redis
  client.on('error', () => {})
  // A cluster's node errors: the failover test kills a node, whose connection's errors are expected, not news.
  client.on('node error', () => {})
  return {
    client,
    nextReady: () => nextReady(client),
    nextError: () => new Promise((resolve) => client.once('error', resolve)),
    units: (key) => logUnits(client as Redis, key),
    close: () => client.disconnect(),
  }
}

/**
 * A GLIDE client. It has no events: its next 'ready' is a command answered after the server was down (sent through
 * the store's adapter, which then says the client is ready again), and it has no errors to report.
 */
function openGlide(client: GlideClient | GlideClusterClient): TestClient {
  const adapter = adaptClient(client)
  if (!adapter) throw new Error('redisStore does not take a GLIDE client')
  const send: Send = (_key, args) => client.customCommand(args, { decoder: Decoder.Bytes })
  return {
    client,
    async nextReady() {
      // Each try is bounded by the client's requestTimeout; GLIDE sends it again once it has reconnected.
      for (;;) {
        const answered = await adapter.del('fltest:ready').then(
          () => true,
          () => false,
        )
        if (answered) break
      }
      // The late answers of calls given up before have run their promise chains too.
      await new Promise((resolve) => setImmediate(resolve))
    },
    nextError: () => Promise.reject(new Error('GLIDE reports no connection errors')),
    // GLIDE gives a read up after its requestTimeout (250 ms), as behind a paused server: read again, behind it.
    async units(key) {
      for (let tries = 0; ; tries++) {
        try {
          return await logUnits(asLogReader(send), key)
        } catch (error) {
          if (tries > 20 || (error as Error).name !== 'TimeoutError') throw error
        }
      }
    },
    close: () => client.close(),
  }
}

const glideKind: ClientKind = {
  name: 'GLIDE',
  connect: async (url, options) => {
    const { hostname, port, username, password } = new URL(url)
    return openGlide(
      await GlideClient.createClient({
        addresses: [{ host: hostname, port: Number(port) }],
        ...(password !== '' && { credentials: { ...(username !== '' && { username }), password } }),
        ...(options?.requestTimeoutMs !== undefined && { requestTimeout: options.requestTimeoutMs }),
      }),
    )
  },
  connectCluster: async (nodes) => openGlide(await GlideClusterClient.createClient({ addresses: [...nodes] })),
}

const iovalkeyKind: ClientKind = {
  name: 'iovalkey',
  open: (url) => openIoredis(new Iovalkey(url)),
  async connect(url) {
    const opened = openIoredis(new Iovalkey(url))
    if ((opened.client as Iovalkey).status !== 'ready') await nextReady(opened.client as Iovalkey)
    return opened
  },
  async connectCluster(nodes) {
    const opened = openIoredis(new IovalkeyCluster([...nodes]))
    await nextReady(opened.client as IovalkeyCluster)
    return opened
  },
}

type NodeRedisClientLike = NodeRedis & Parameters<typeof sendOnClient>[0]
type NodeRedisClusterLike = NodeRedis & Parameters<typeof sendOnCluster>[0]

function nodeRedisKind(
  name: string,
  makeClient: (url: string) => NodeRedisClientLike,
  makeCluster: (rootNodes: { url: string }[]) => NodeRedisClusterLike,
): ClientKind {
  const open = (url: string) => {
    const client = makeClient(url)
    return openNodeRedis(client, sendOnClient(client))
  }
  return {
    name,
    open,
    async connect(url) {
      const opened = open(url)
      await opened.connected
      return opened
    },
    async connectCluster(nodes) {
      const cluster = makeCluster(nodes.map(({ host, port }) => ({ url: `redis://${host}:${port}` })))
      const opened = openNodeRedis(cluster, sendOnCluster(cluster))
      await opened.connected
      return opened
    },
  }
}

export const clientKinds: readonly ClientKind[] = [
  {
    name: 'ioredis',
    open: (url) => openIoredis(new Redis(url)),
    async connect(url) {
      const opened = openIoredis(new Redis(url))
      if ((opened.client as Redis).status !== 'ready') await opened.nextReady()
      return opened
    },
    async connectCluster(nodes) {
      const opened = openIoredis(new Cluster([...nodes]))
      await opened.nextReady()
      return opened
    },
  },
  nodeRedisKind(
    'node-redis 6',
    (url) => createClient({ url }),
    (nodes) => createCluster({ rootNodes: nodes }),
  ),
  nodeRedisKind(
    'node-redis 5',
    (url) => createClient5({ url }),
    (nodes) => createCluster5({ rootNodes: nodes }),
  ),
  glideKind,
  iovalkeyKind,
]

/** The node-redis kinds only. */
export const nodeRedisKinds = clientKinds.filter((kind) => kind.name.startsWith('node-redis'))

/** The clients of Valkey's own: GLIDE and iovalkey. */
export const valkeyKinds = [glideKind, iovalkeyKind]
