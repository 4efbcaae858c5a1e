// What the store and the script runner need of a Redis client, whichever library made it.

/** A listener of a client's events. */
export type Listener = (...args: unknown[]) => void

/** A script's argument: binary ones go as they are. */
export type ScriptArgument = string | number | Buffer

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
  readonly library: 'ioredis' | 'node-redis' | 'glide'
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
