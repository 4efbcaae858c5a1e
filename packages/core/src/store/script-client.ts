import { setMaxListeners } from 'node:events'
import { createWeakSignal, type WeakSignal } from '../common/weak-signal.js'
import { clusterSlot } from './cluster-slot.js'
import { ReplyError } from './server-failure.js'

// Structural types of the clients redisStore accepts: core's declarations need neither ioredis nor redis to be
// installed, and nothing here loads either at run time.

type Listener = (...args: unknown[]) => void

/** A script's argument: binary ones go as they are. */
export type ScriptArgument = string | number | Buffer

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

/** The options fleetlimit passes to node-redis's `sendCommand`: how each RESP type is returned. */
export interface NodeRedisCommandOptions {
  readonly typeMapping?: Readonly<Record<number, unknown>>
  /** node-redis takes a command back from its queue when this aborts before the command is written. */
  readonly abortSignal?: AbortSignal
}

interface NodeRedisEmitter {
  on(event: string, listener: Listener): unknown
  listenerCount(event: string): number
  /** Present from node-redis 5 on (type mapping), which fleetlimit needs to read a binary reply. */
  withTypeMapping(typeMapping: never): unknown
}

/** A node-redis (5, 6) client, as `createClient()` makes it; fleetlimit never connects or closes it. */
export interface NodeRedisClient extends NodeRedisEmitter {
  readonly isOpen: boolean
  readonly isReady: boolean
  sendCommand(args: readonly (string | Uint8Array)[], options?: NodeRedisCommandOptions): Promise<unknown>
}

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

/** What `redisStore(client)` accepts. */
export type RedisStoreClient = IoredisClient | NodeRedisClient | NodeRedisCluster

/** The client's connection, as the store reports it to the limiter (see Store in store.ts). */
export interface ConnectionWatch {
  /** False while a command would only wait in the client for a lost connection. */
  connected(): boolean
  /** When it last became ready (performance.now() time); +Infinity while the first connection is made; undefined while a lost one is. */
  readySince(): number | undefined
  /** The client's last error, which says why it is disconnected. */
  lastError(): unknown
  /**
   * Calls `listener` each time the client is ready again after a lost connection. Held weakly: a store dropped
   * by its limiters is not kept alive by its client.
   */
  onReady(listener: () => void): void
}

/**
 * What the store and the script runner need of a client, whichever library made it. Errors come out as ioredis
 * makes them: an error reply is an Error named 'ReplyError' whose message starts with the reply's code, and
 * anything else (a lost connection, a closed client) is not, which is what server-failure.ts classifies.
 */
export interface ClientAdapter {
  readonly library: 'ioredis' | 'node-redis'
  /** A Redis Cluster: a script's keys must share one slot. */
  readonly cluster: boolean
  /** EVAL or EVALSHA; with `binary`, a bulk-string reply as a Buffer. On a cluster, routed by the first key. */
  evaluate(
    command: 'EVAL' | 'EVALSHA',
    script: string,
    keys: readonly string[],
    args: readonly ScriptArgument[],
    binary: boolean,
  ): Promise<unknown>
  del(key: string): Promise<void>
  /** The server that holds a key: a cluster master's address, '' for a single server. */
  serverOf(key: string): string
  /** Starts watching the connection on first call (one set of listeners per client, however many stores share it). */
  watch(): ConnectionWatch
  /** PUBLISH (on a cluster, to any node: Redis passes a message to every node). */
  publish(channel: string, message: string): Promise<void>
  /**
   * Delivers the channel's messages to `listener`, held weakly, through one subscriber connection per client (a
   * duplicate of it, made on the first call, closed when the client ends). `undefined` says that messages may have
   * been missed: the subscriber's connection was lost, and is back. Nothing is delivered when the client cannot
   * be duplicated. Resolves once the server confirmed the channel's first subscription (messages published
   * before are not delivered); rejects when it cannot subscribe.
   */
  subscribe(channel: string, listener: (message: string | undefined) => void): Promise<void>
}

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
          : undefined
    if (!adapter) return undefined
    adapters.set(client, adapter)
  }
  return adapter
}

type Candidate = Partial<Record<string, unknown>>

function isIoredis(client: object): client is IoredisClient {
  const c = client as Candidate
  return (
    typeof c.call === 'function' &&
    typeof c.callBuffer === 'function' &&
    typeof c.del === 'function' &&
    typeof c.status === 'string'
  )
}

// node-redis 5+: `withTypeMapping` (node-redis 4 has none, and returned Buffers another way). A sentinel
// (`getMasterNode`) and a pool (`totalClients`) take other `sendCommand` arguments, and are not accepted.
function isNodeRedis(client: object): boolean {
  const c = client as Candidate
  return (
    typeof c.sendCommand === 'function' &&
    typeof c.withTypeMapping === 'function' &&
    typeof c.on === 'function' &&
    typeof c.isOpen === 'boolean' &&
    typeof c.getMasterNode !== 'function' &&
    !('totalClients' in c)
  )
}

function isNodeRedisCluster(client: object): client is NodeRedisCluster {
  const c = client as Candidate
  return isNodeRedis(client) && Array.isArray(c.masters) && Array.isArray(c.slots)
}

function isNodeRedisClient(client: object): client is NodeRedisClient {
  return isNodeRedis(client) && typeof (client as Candidate).isReady === 'boolean'
}

// ioredis states in which a command would wait in the offline queue for a connection that was lost.
const DISCONNECTED = new Set(['reconnecting', 'close', 'end', 'disconnecting'])

function ioredisAdapter(client: IoredisClient): ClientAdapter {
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

/** Calls `missed` on every 'ready' after the first: a connection lost and made again. */
function onReadyAgain(emitter: { on(event: string, listener: Listener): unknown }, missed: () => void): void {
  let readyBefore = false
  emitter.on('ready', () => {
    if (readyBefore) missed()
    readyBefore = true
  })
}

/** One subscriber connection, as each library makes it. */
interface Subscriber {
  listen(deliver: (channel: string, message: string) => void, missed: () => void): void
  /** Subscribes; resolves once the server confirmed it. */
  add(channel: string): Promise<void>
}

/** The subscribe() of an adapter: one connection, made on the first call; listeners per channel, held weakly. */
function createSubscriptions(open: () => Subscriber | undefined): ClientAdapter['subscribe'] {
  const channels = new Map<string, { signal: WeakSignal<[string | undefined]>; subscribed: Promise<void> }>()
  let subscriber: Subscriber | undefined | null = null
  return (channel, listener) => {
    let entry = channels.get(channel)
    if (!entry) {
      const signal = createWeakSignal<[string | undefined]>()
      if (subscriber === null) {
        subscriber = open()
        subscriber?.listen(
          (from, message) => channels.get(from)?.signal.emit(message),
          () => {
            for (const each of channels.values()) each.signal.emit(undefined)
          },
        )
      }
      const subscribed = subscriber ? subscriber.add(channel) : Promise.reject(new Error('no subscriber'))
      subscribed.catch(() => {})
      entry = { signal, subscribed }
      channels.set(channel, entry)
    }
    entry.signal.add(listener)
    return entry.subscribed
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
  // Before the first connection ('wait', 'connecting') a command is sent, bounded by the limiter's deadline.
  const connected = () => !DISCONNECTED.has(client.status)
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

// node-redis's RESP_TYPES.BLOB_STRING ('$'), the same in 5 and 6: a bulk string as a Buffer. Given on every
// call, so that a type mapping on the user's client changes nothing here.
const BINARY: NodeRedisCommandOptions = Object.freeze({ typeMapping: Object.freeze({ 36: Buffer }) })
const DEFAULT: NodeRedisCommandOptions = Object.freeze({ typeMapping: Object.freeze({}) })

/** EVAL's arguments as node-redis takes them: strings and Buffers. */
const evalArgs = (
  command: string,
  script: string,
  keys: readonly string[],
  args: readonly ScriptArgument[],
): (string | Buffer)[] => [
  command,
  script,
  String(keys.length),
  ...keys,
  ...args.map((arg) => (typeof arg === 'number' ? String(arg) : arg)),
]

// A write that goes out this much later than the command was given says the event loop was busy (as LATE_TIMER_MS
// in store/guarded-call.ts says of a timer).
const HELD_WRITE_MS = 10

/**
 * node-redis writes the commands of one turn of the event loop at its end (setImmediate), where ioredis writes each
 * at once: a command given at the start of a long synchronous stretch (a burst of calls set up at once, a blocking
 * handler) leaves the process only when it ends. This notes when such held-up writes went out, so that the guard
 * counts a call's time from then, as it does for a call sent while the connection was made (readySince).
 */
function createWriteWatch() {
  let scheduledAt: number | undefined
  let heldUntil = Number.NEGATIVE_INFINITY
  // Runs in the check phase where node-redis writes (scheduled just before its own): as the writes go out.
  const wrote = () => {
    const now = performance.now()
    if (scheduledAt !== undefined && now - scheduledAt > HELD_WRITE_MS) heldUntil = now
    scheduledAt = undefined
  }
  return {
    sent() {
      if (scheduledAt !== undefined) return
      scheduledAt = performance.now()
      setImmediate(wrote)
    },
    /** When the latest held-up writes went out (performance.now() time); -Infinity before any was. */
    heldUntil: () => heldUntil,
  }
}

function nodeRedisClientAdapter(client: NodeRedisClient): ClientAdapter {
  const writes = createWriteWatch()
  const unwritten = createUnwrittenCommands(client)
  const send = async (args: (string | Buffer)[], binary: boolean) => {
    const options = unwritten.options(binary)
    try {
      writes.sent()
      return await client.sendCommand(args, options)
    } catch (error) {
      throw asIoredisError(unwritten.withdrawn(options, error) ?? error)
    }
  }
  return {
    library: 'node-redis',
    cluster: false,
    evaluate: (command, script, keys, args, binary) => send(evalArgs(command, script, keys, args), binary),
    del: async (key) => {
      await send(['DEL', key], false)
    },
    serverOf: () => '',
    watch: once(() => watchNodeRedisClient(client, writes.heldUntil)),
    publish: async (channel, message) => {
      await send(['PUBLISH', channel, message], false)
    },
    subscribe: createSubscriptions(() => nodeRedisSubscriber(client)),
  }
}

// node-redis's AbortError's message, the same in 5 and 6 (its class name may not survive a bundler).
const ABORTED = 'The command was aborted'

/**
 * node-redis 5.0 writes the commands it holds at the end of a turn of the event loop even when the connection was
 * lost in between: into the closed socket, after it has failed the commands in flight. Nothing fails those then if
 * the next connection attempt succeeds, and every later reply goes to the command before its own (a decision for
 * another key). So the commands given while a connection lived share one abort signal, aborted when the client
 * starts reconnecting: node-redis takes back each one not written yet, and it fails at once as a lost connection.
 */
function createUnwrittenCommands(client: NodeRedisEmitter) {
  let binary: NodeRedisCommandOptions = BINARY
  let plain: NodeRedisCommandOptions = DEFAULT
  const renew = () => {
    const controller = new AbortController()
    // One listener per command not yet written: a burst is not a leak.
    setMaxListeners(0, controller.signal)
    binary = { ...BINARY, abortSignal: controller.signal }
    plain = { ...DEFAULT, abortSignal: controller.signal }
    return controller
  }
  let controller = renew()
  client.on('reconnecting', () => {
    controller.abort(new Error('the connection was lost before node-redis wrote the command'))
    controller = renew()
  })
  return {
    options: (wantBinary: boolean) => (wantBinary ? binary : plain),
    /** The reason a command failed when it was taken back unwritten; undefined for any other failure. */
    withdrawn(options: NodeRedisCommandOptions, error: unknown): unknown {
      const signal = options.abortSignal
      return signal?.aborted && error instanceof Error && error.message === ABORTED ? signal.reason : undefined
    },
  }
}

/** What fleetlimit uses of a node-redis subscriber (a duplicate of the user's client or cluster). */
interface NodeRedisSubscriber {
  readonly isOpen: boolean
  on(event: string, listener: Listener): unknown
  connect(): Promise<unknown>
  subscribe(channel: string, listener: (message: string) => void): Promise<unknown>
  destroy(): void
}

function nodeRedisSubscriber(client: NodeRedisClient): Subscriber | undefined {
  const duplicate = (client as { duplicate?: () => NodeRedisSubscriber }).duplicate
  if (typeof duplicate !== 'function' || !client.isOpen) return undefined
  const sub = duplicate.call(client)
  // The user's client reports an outage: the subscriber's errors would say it again (and crash unheard).
  sub.on('error', () => {})
  const connected = sub.connect()
  connected.catch(() => {})
  client.on('end', () => {
    if (sub.isOpen) sub.destroy()
  })
  let deliver: (channel: string, message: string) => void = () => {}
  return {
    listen(to, missed) {
      deliver = to
      onReadyAgain(sub, missed)
    },
    add: (channel) =>
      connected.then(async () => {
        await sub.subscribe(channel, (message) => deliver(channel, message))
      }),
  }
}

/** What subscribe() answers where no subscriber can be made: a rejection already handled, so ignoring it is safe. */
const NO_SUBSCRIBER = Promise.reject(new Error('no subscriber on a node-redis cluster'))
NO_SUBSCRIBER.catch(() => {})

function nodeRedisClusterAdapter(cluster: NodeRedisCluster): ClientAdapter {
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
 * A node-redis client queues commands while it connects and reconnects (unless `disableOfflineQueue`): a command
 * is sent while the first connection is made, or a new socket is up, and not while a lost one is retried.
 */
function watchNodeRedisClient(client: NodeRedisClient, heldUntil: () => number): ConnectionWatch {
  let last: unknown
  let readyAt = client.isReady ? performance.now() : undefined
  let lost = false
  const printer = createOutagePrinter(client, 'node-redis')
  const readiness = createWeakSignal<[]>()
  client.on('error', (error: unknown) => {
    last = asIoredisError(error)
    // An error while not ready is a failed or lost connection (a reply error while ready, say of a PING, is not).
    if (!client.isReady) lost = true
    printer.error(error)
  })
  client.on('reconnecting', () => {
    lost = true
  })
  client.on('connect', () => {
    lost = false
  })
  client.on('ready', () => {
    readyAt = performance.now()
    last = undefined
    lost = false
    printer.ready()
    readiness.emit()
  })
  // Before connect() (isOpen false) a command is refused at once: not connected.
  const connected = () => client.isReady || (client.isOpen && !lost)
  return {
    connected,
    readySince: () => {
      if (client.isReady) return readyAt === undefined ? readyAt : Math.max(readyAt, heldUntil())
      return readyAt === undefined && connected() ? Number.POSITIVE_INFINITY : undefined
    },
    lastError: () => last,
    onReady: readiness.add,
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

/**
 * What a client with no 'error' listener of its own would hide (node-redis would crash, ioredis print each
 * error): one line when an outage starts, and one when the client is ready again. Errors in between, one per
 * reconnect attempt, are counted, not printed.
 */
function createOutagePrinter(emitter: { listenerCount(event: string): number }, library: string) {
  let errors = 0
  return {
    error(error: unknown) {
      if (emitter.listenerCount('error') !== 1) return
      if (errors++ === 0) {
        console.error(
          `[fleetlimit] ${library} client error: ${oneLine(error)} (further errors are counted until it is ready)`,
        )
      }
    },
    ready() {
      if (errors === 0) return
      console.error(`[fleetlimit] ${library} client ready again, after ${errors} error${errors === 1 ? '' : 's'}`)
      errors = 0
    },
  }
}

/** An error as one line: its message, or its code (a connection refused on several addresses has no message). */
function oneLine(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const { code } = error as { code?: unknown }
  const text = error.message || (typeof code === 'string' ? code : error.name)
  return text.replace(/\s*\n\s*/g, ' ')
}

// A Redis error reply starts with its code in capitals (ERR, WRONGTYPE, NOSCRIPT, LOADING, …); no error node-redis
// or Node makes for a connection does. The message says it even when a bundler renamed node-redis's classes.
const REPLY_CODE = /^[A-Z][A-Z0-9_]+ /
// The server closes the connection after this reply: a lost connection, not an answer about the call. node-redis
// meets it when it sends a queued command behind a refused AUTH (ioredis waits for 'ready').
const PROTOCOL_ERROR = /^ERR Protocol error/

/**
 * node-redis's error replies (ErrorReply and its SimpleError, BlobError) renamed as ioredis names them; anything
 * else (a closed socket, a closed client) stays as it is.
 */
export function asIoredisError(error: unknown): unknown {
  if (!(error instanceof Error) || error.name === 'ReplyError' || PROTOCOL_ERROR.test(error.message)) return error
  if (!isErrorReply(error) && !REPLY_CODE.test(error.message)) return error
  return new ReplyError(error.message, { cause: error })
}

function isErrorReply(error: Error): boolean {
  for (
    let proto = Object.getPrototypeOf(error);
    proto && proto !== Error.prototype;
    proto = Object.getPrototypeOf(proto)
  ) {
    if ((proto as { constructor?: { name?: string } }).constructor?.name === 'ErrorReply') return true
  }
  return false
}

function once<T>(make: () => T): () => T {
  let made: { value: T } | undefined
  return () => {
    made ??= { value: make() }
    return made.value
  }
}
