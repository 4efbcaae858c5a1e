import { randomBytes } from 'node:crypto'
import type { Cluster } from 'ioredis'
import { OptionError, StoreError } from '../common/errors.js'
import { checkOptionNames, optionNames } from '../common/validate.js'
import { type Deadline, DeadlineExceeded } from '../limiter/guarded-call.js'
import type { CircuitBreakerOptions } from './circuit-breaker.js'
import { clusterSlot } from './cluster-slot.js'
import { createScriptRunner, type LuaScript, type ScriptClient } from './script-runner.js'
import { bucketedScript, leaseScript, slidingLogMultiScript, slidingLogScript } from './scripts.generated.js'
import { createServerClock, type ServerClock } from './server-clock.js'
import { createServerSet } from './server-set.js'
import {
  type LeaseRequest,
  type LeaseResult,
  STORE,
  type Store,
  type WindowRequest,
  type WindowResult,
} from './store.js'

export interface RedisStoreOptions {
  /** The first part of every key. Default 'fleetlimit'. */
  prefix?: string
  /** When to stop calling a failing Redis (on a Cluster: a failing master), and when to probe it again. */
  breaker?: CircuitBreakerOptions
  /**
   * The most decisions in flight to one server (on a Cluster: one master) from this store; more wait in this
   * process for a slot, and their deadline starts when they are sent. Default 128.
   */
  maxInFlight?: number
}

// ioredis states in which a command would wait in the offline queue for a connection that was lost.
const DISCONNECTED = new Set(['reconnecting', 'close', 'end', 'disconnecting'])

const REDIS_STORE_OPTION_NAMES = optionNames<RedisStoreOptions>({ prefix: true, breaker: true, maxInFlight: true })

const PREFIX_PATTERN = /^[^\s{}]{1,64}$/

/**
 * The fleet store: every decision is one script call (lua/sliding-log.lua, or sliding-log-multi.lua
 * for several policies at once) on the given ioredis `Redis` or `Cluster`, which is used as it is:
 * fleetlimit defines nothing on it and never closes it.
 *
 * @example
 * ```ts
 * const store = redisStore(new Redis(process.env.REDIS_URL), { prefix: 'myapp' })
 * ```
 */
export function redisStore(client: ScriptClient, options: RedisStoreOptions = {}): Store {
  if (!isScriptClient(client)) {
    throw new OptionError('redisStore(client)', client, 'an ioredis Redis or Cluster instance')
  }
  checkOptionNames(options, 'redisStore', REDIS_STORE_OPTION_NAMES)
  const prefix = options.prefix ?? 'fleetlimit'
  if (typeof prefix !== 'string' || !PREFIX_PATTERN.test(prefix)) {
    throw new OptionError('redisStore.prefix', prefix, '1 to 64 characters with no whitespace and no `{` or `}`')
  }

  // On a Cluster, one breaker per master, found from the key's slot in ioredis's own slot map.
  const cluster = (client as { isCluster?: boolean }).isCluster ? (client as Cluster) : undefined
  // The slot is the tenant's hash tag's, so the prefix (which holds no brace) needs no prepending.
  const serverOf = cluster ? (key: string) => cluster.slots[clusterSlot(key)]?.[0] ?? '' : () => ''
  const servers = createServerSet(
    {
      ...(options.breaker !== undefined && { breaker: options.breaker }),
      ...(options.maxInFlight !== undefined && { maxInFlight: options.maxInFlight }),
    },
    serverOf,
  )
  const runner = createScriptRunner(client)
  const clocks = new Map<string, ServerClock>()
  const clockOf = (key: string) => {
    const server = serverOf(key)
    let clock = clocks.get(server)
    if (!clock) {
      clock = createServerClock()
      clocks.set(server, clock)
    }
    return clock
  }

  /**
   * Runs a recording script with the caller's deadline in the server's clock (erring early), so that a call
   * that runs after its caller gave up records nothing. A refusal while the caller still waits means the clock
   * estimate was off (the server's clock stepped forward) or the deadline moved: try once more, with both known.
   */
  async function runBefore(
    script: LuaScript,
    keys: string[],
    args: (string | number)[],
    deadline: Deadline | undefined,
  ): Promise<number[]> {
    const clock = clockOf(keys[0] as string)
    const at = DEADLINE_ARG.get(script) as number
    for (let attempt = 0; ; attempt++) {
      const serverDeadline = deadline === undefined ? undefined : clock.serverTimeAt(deadline.at)
      args[at] = serverDeadline === undefined ? 0 : Math.floor(serverDeadline * 1000)
      const reply = numbers(await runner.run(script, keys, args), script)
      const receivedAt = performance.now()
      const nowUs = reply[script === slidingLogMultiScript ? 1 : 4] as number
      clock.observe(nowUs / 1000, receivedAt)
      if (reply[0] !== -1) return reply
      if (attempt > 0 || deadline === undefined || receivedAt >= deadline.at) {
        throw new DeadlineExceeded('the call reached Redis after its deadline: nothing was recorded')
      }
    }
  }
  const { lastError, readySince } = watchConnection(client)
  // Members must be unique across the fleet: a random tag per store, then a counter.
  const tag = randomBytes(8).toString('base64url')
  let counter = 0

  async function decide(
    requests: readonly WindowRequest[],
    mode: 'consume' | 'peek',
    deadline?: Deadline,
  ): Promise<WindowResult[]> {
    const member = mode === 'consume' ? tag + (counter++).toString(36) : ''
    // A peek records nothing, so it needs no deadline.
    const until = mode === 'consume' ? deadline : undefined
    const keys = requests.map((request) => `${prefix}:${request.key}`)
    const [first] = requests
    if (requests.length === 1 && first?.buckets !== undefined) {
      const { limit, windowMs, buckets, cost } = first
      const reply = await runBefore(bucketedScript, keys, [limit, windowMs, buckets, cost, mode, 0], until)
      return [toResult(reply, 0, reply[4] as number)]
    }
    if (requests.length === 1 && first) {
      const { limit, windowMs, cost } = first
      const reply = await runBefore(slidingLogScript, keys, [limit, windowMs, cost, member, mode, 0], until)
      return [toResult(reply, 0, reply[4] as number)]
    }
    // One cost for every window: the limiter asks for the same units in each policy.
    const args: (string | number)[] = [first?.cost ?? 1, member, mode, 0]
    for (const request of requests) args.push(request.limit, request.windowMs)
    const reply = await runBefore(slidingLogMultiScript, keys, args, until)
    if (reply.length !== 2 + 4 * requests.length) throw unexpected(reply, slidingLogMultiScript)
    return requests.map((_, i) => toResult(reply, 2 + 4 * i, reply[1] as number))
  }

  async function lease(request: LeaseRequest, deadline?: Deadline): Promise<LeaseResult> {
    const id = `${tag + (counter++).toString(36)}l`
    const { key, limit, windowMs, want, min, waitFor, ttlMs } = request
    const args = [limit, windowMs, want, min, waitFor, ttlMs, id, 0]
    const reply = await runBefore(leaseScript, [`${prefix}:${key}`], args, deadline)
    const [granted, , , , nowUs, scoreUs] = reply as [number, number, number, number, number, number]
    return {
      ...toResult([granted > 0 ? 1 : 0, ...reply.slice(1)], 0, nowUs),
      lease: { id, score: scoreUs / 1000, granted },
    }
  }

  return {
    [STORE]: true,
    consume: (requests, deadline) => decide(requests, 'consume', deadline),
    lease,
    release: async (key, { id, granted }, units) => {
      // Any `units` members of the lease will do; the highest-numbered are the ones a holder never took.
      // In chunks: one command's arguments stay small whatever the lease's size.
      for (let done = 0; done < units; done += RELEASE_CHUNK) {
        const members = Array.from(
          { length: Math.min(RELEASE_CHUNK, units - done) },
          (_, i) => `${id}:${granted - done - i}`,
        )
        await client.zrem(`${prefix}:${key}`, ...members)
      }
    },
    peek: (requests) => decide(requests, 'peek'),
    reset: async (key) => {
      await client.del(`${prefix}:${key}`)
    },
    // Before the first connection ('wait', 'connecting') a command is sent, bounded by the limiter's deadline.
    isConnected: () => !DISCONNECTED.has(client.status),
    lastError,
    readySince,
    servers,
  }
}

function isScriptClient(client: unknown): client is ScriptClient {
  const candidate = client as Partial<Record<'evalsha' | 'eval' | 'del' | 'zrem' | 'status', unknown>> | null
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.evalsha === 'function' &&
    typeof candidate.eval === 'function' &&
    typeof candidate.del === 'function' &&
    typeof candidate.zrem === 'function' &&
    typeof candidate.status === 'string'
  )
}

const RELEASE_CHUNK = 1_000

// Where each recording script takes its deadline among its arguments (see lua/*.lua).
const DEADLINE_ARG = new Map([
  [slidingLogScript, 5],
  [bucketedScript, 5],
  [slidingLogMultiScript, 3],
  [leaseScript, 7],
])

// Replies of every script: their length, but for the multi-window script's, which depends on its windows
// (and is 2 when its deadline passed).
const REPLY_LENGTH = new Map([
  [slidingLogScript, 5],
  [bucketedScript, 5],
  [leaseScript, 6],
])

function numbers(reply: unknown, script: LuaScript): number[] {
  const length = REPLY_LENGTH.get(script)
  if (
    !Array.isArray(reply) ||
    (length === undefined ? reply.length < 2 : reply.length !== length) ||
    !reply.every((n) => typeof n === 'number')
  ) {
    throw unexpected(reply, script)
  }
  return reply as number[]
}

const unexpected = (reply: unknown, script: LuaScript) =>
  new StoreError(`unexpected reply from ${script.name}.lua: ${JSON.stringify(reply)?.slice(0, 200)}`)

/**
 * What the limiter needs to know of the client's connection: when it became ready (a call sent before then
 * waited for the connection, not for the server), and its last error, so that a decision refused while it is
 * disconnected can say why (a wrong password, a refused connection). Listening for errors stops ioredis's own
 * "Unhandled error event" print, so it is printed here as ioredis would while no one else listens.
 */
function watchConnection(client: ScriptClient) {
  let last: unknown
  let readyAt = client.status === 'ready' ? performance.now() : undefined
  client.on('error', (error: unknown) => {
    last = error
    if (client.listenerCount('error') === 1) console.error('[ioredis] Unhandled error event:', (error as Error)?.stack)
  })
  client.on('ready', () => {
    readyAt = performance.now()
    last = undefined
  })
  const readySince = () => {
    if (client.status === 'ready') return readyAt
    return readyAt === undefined && !DISCONNECTED.has(client.status) ? Number.POSITIVE_INFINITY : undefined
  }
  return { lastError: () => last, readySince }
}

const toResult = (reply: number[], at: number, nowUs: number): WindowResult => ({
  allowed: reply[at] === 1,
  remaining: reply[at + 1] as number,
  retryAfterMs: reply[at + 2] as number,
  resetMs: reply[at + 3] as number,
  now: nowUs / 1000,
})
