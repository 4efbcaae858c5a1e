import type { Listener, ScriptArgument } from './client-adapter.js'

/** The options fleetlimit passes to node-redis's `sendCommand`: how each RESP type is returned. */
export interface NodeRedisCommandOptions {
  readonly typeMapping?: Readonly<Record<number, unknown>>
  /** node-redis takes a command back from its queue when this aborts before the command is written. */
  readonly abortSignal?: AbortSignal
}

export interface NodeRedisEmitter {
  on(event: string, listener: Listener): unknown
  listenerCount(event: string): number
  /** Present from node-redis 5 on (type mapping), which fleetlimit needs to read a binary reply. */
  withTypeMapping(typeMapping: never): unknown
}

export type Candidate = Partial<Record<string, unknown>>

// node-redis 5+: `withTypeMapping` (node-redis 4 has none, and returned Buffers another way). A sentinel
// (`getMasterNode`) and a pool (`totalClients`) take other `sendCommand` arguments, and are not accepted.
export function isNodeRedis(client: object): boolean {
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

// node-redis's RESP_TYPES.BLOB_STRING ('$'), the same in 5 and 6: a bulk string as a Buffer. Given on every
// call, so that a type mapping on the user's client changes nothing here.
export const BINARY: NodeRedisCommandOptions = Object.freeze({ typeMapping: Object.freeze({ 36: Buffer }) })
export const DEFAULT: NodeRedisCommandOptions = Object.freeze({ typeMapping: Object.freeze({}) })

/** EVAL's arguments as node-redis takes them: strings and Buffers. */
export const evalArgs = (
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
export function createWriteWatch() {
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
