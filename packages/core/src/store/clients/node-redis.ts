import { setMaxListeners } from 'node:events'
import { once } from '../../common/once.js'
import { createWeakSignal } from '../../common/weak-signal.js'
import type { ClientAdapter, ConnectionWatch, Listener } from './client-adapter.js'
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
import { createSubscriptions, onReadyAgain, type Subscriber } from './subscriptions.js'

/** A node-redis (5, 6) client, as `createClient()` makes it; fleetlimit never connects or closes it. */
export interface NodeRedisClient extends NodeRedisEmitter {
  readonly isOpen: boolean
  readonly isReady: boolean
  sendCommand(args: readonly (string | Uint8Array)[], options?: NodeRedisCommandOptions): Promise<unknown>
}

export function isNodeRedisClient(client: object): client is NodeRedisClient {
  return isNodeRedis(client) && typeof (client as Candidate).isReady === 'boolean'
}

export function nodeRedisClientAdapter(client: NodeRedisClient): ClientAdapter {
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
