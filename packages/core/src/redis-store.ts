import { randomBytes } from 'node:crypto'
import type { Cluster } from 'ioredis'
import { type CircuitBreakerOptions, createBreakerSet } from './circuit-breaker.js'
import { clusterSlot } from './cluster-slot.js'
import { OptionError, StoreError } from './errors.js'
import { checkOptionNames } from './options.js'
import { createScriptRunner, type ScriptClient } from './script-runner.js'
import {
  bucketedWindowScript,
  leaseScript,
  slidingWindowMultiScript,
  slidingWindowScript,
} from './scripts.generated.js'
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
}

// ioredis states in which a command would wait in the offline queue for a connection that was lost.
const DISCONNECTED = new Set(['reconnecting', 'close', 'end', 'disconnecting'])

const PREFIX_PATTERN = /^[^\s{}]{1,64}$/

/**
 * The fleet store: every decision is one script call (lua/sliding-window.lua, or sliding-window-multi.lua
 * for several policies at once) on the given ioredis `Redis` or `Cluster`, which is used as it is:
 * fleetlimit defines nothing on it and never closes it.
 */
export function redisStore(client: ScriptClient, options: RedisStoreOptions = {}): Store {
  if (!isScriptClient(client)) {
    throw new OptionError('redisStore(client)', client, 'an ioredis Redis or Cluster instance')
  }
  checkOptionNames(options, 'redisStore', ['prefix', 'breaker'])
  const prefix = options.prefix ?? 'fleetlimit'
  if (typeof prefix !== 'string' || !PREFIX_PATTERN.test(prefix)) {
    throw new OptionError('redisStore.prefix', prefix, '1 to 64 characters with no whitespace and no `{` or `}`')
  }

  // On a Cluster, one breaker per master, found from the key's slot in ioredis's own slot map.
  const cluster = (client as { isCluster?: boolean }).isCluster ? (client as Cluster) : undefined
  const breakers = createBreakerSet(
    options.breaker,
    // The slot is the tenant's hash tag's, so the prefix (which holds no brace) needs no prepending.
    cluster ? (key) => cluster.slots[clusterSlot(key)]?.[0] ?? '' : undefined,
  )
  const runner = createScriptRunner(client)
  // Members must be unique across the fleet: a random tag per store, then a counter.
  const tag = randomBytes(8).toString('base64url')
  let counter = 0

  async function decide(requests: readonly WindowRequest[], mode: 'consume' | 'peek'): Promise<WindowResult[]> {
    const member = mode === 'consume' ? tag + (counter++).toString(36) : ''
    const keys = requests.map((request) => `${prefix}:${request.key}`)
    const [first] = requests
    if (requests.length === 1 && first?.buckets !== undefined) {
      const args = [first.limit, first.windowMs, first.buckets, first.cost, mode]
      return [parseSingle(await runner.run(bucketedWindowScript, keys, args))]
    }
    if (requests.length === 1 && first) {
      const args = [first.limit, first.windowMs, first.cost, member, mode]
      return [parseSingle(await runner.run(slidingWindowScript, keys, args))]
    }
    // One cost for every window: the limiter asks for the same units in each policy.
    const args: (string | number)[] = [first?.cost ?? 1, member, mode]
    for (const request of requests) args.push(request.limit, request.windowMs)
    return parseMulti(await runner.run(slidingWindowMultiScript, keys, args), requests.length)
  }

  async function lease(request: LeaseRequest): Promise<LeaseResult> {
    const id = `${tag + (counter++).toString(36)}l`
    const { key, limit, windowMs, want, min, waitFor, ttlMs } = request
    const reply = numbers(
      await runner.run(leaseScript, [`${prefix}:${key}`], [limit, windowMs, want, min, waitFor, ttlMs, id]),
      6,
      'lease.lua',
    )
    const [granted, , , , nowUs, scoreUs] = reply as [number, number, number, number, number, number]
    return {
      ...toResult([granted > 0 ? 1 : 0, ...reply.slice(1)], 0, nowUs),
      lease: { id, score: scoreUs / 1000, granted },
    }
  }

  return {
    [STORE]: true,
    consume: (requests) => decide(requests, 'consume'),
    lease,
    release: async (key, { id, granted }, units) => {
      // Any `units` members of the lease will do; the highest-numbered are the ones a holder never took.
      const members = Array.from({ length: units }, (_, i) => `${id}:${granted - i}`)
      if (members.length > 0) await client.zrem(`${prefix}:${key}`, ...members)
    },
    peek: (requests) => decide(requests, 'peek'),
    reset: async (key) => {
      await client.del(`${prefix}:${key}`)
    },
    // Before the first connection ('wait', 'connecting') a command is sent, bounded by the limiter's deadline.
    isConnected: () => !DISCONNECTED.has(client.status),
    breakers,
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

function numbers(reply: unknown, length: number, script: string): number[] {
  if (!Array.isArray(reply) || reply.length !== length || !reply.every((n) => typeof n === 'number')) {
    throw new StoreError(`unexpected reply from ${script}: ${JSON.stringify(reply)?.slice(0, 200)}`)
  }
  return reply as number[]
}

const toResult = (reply: number[], at: number, nowUs: number): WindowResult => ({
  allowed: reply[at] === 1,
  remaining: reply[at + 1] as number,
  retryAfterMs: reply[at + 2] as number,
  resetMs: reply[at + 3] as number,
  now: nowUs / 1000,
})

function parseSingle(reply: unknown): WindowResult {
  const values = numbers(reply, 5, 'sliding-window.lua')
  return toResult(values, 0, values[4] as number)
}

function parseMulti(reply: unknown, windows: number): WindowResult[] {
  const values = numbers(reply, 2 + 4 * windows, 'sliding-window-multi.lua')
  return Array.from({ length: windows }, (_, i) => toResult(values, 2 + 4 * i, values[1] as number))
}
