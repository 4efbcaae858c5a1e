import { OptionError, StoreError } from '../common/errors.js'
import { checkOptionNames, optionNames } from '../common/validate.js'
import { createCallBatcher } from './call-batcher.js'
import type { CircuitBreakerOptions } from './circuit-breaker.js'
import { adaptClient, type RedisStoreClient } from './clients/adapt-client.js'
import { clusterSlot } from './cluster-slot.js'
import { createRunBefore, type Deadline } from './guarded-call.js'
import { createRedisChannels } from './redis-channels.js'
import { noteCalls } from './redis-notes.js'
import { createScriptRunner, type LuaScript } from './script-runner.js'
import { bucketedScript } from './scripts.generated.js'
import { createServerSet, guardStore } from './server-set.js'
import {
  costWindowsCall,
  extendCall,
  freeCall,
  leaseCall,
  PERIOD_WINDOW,
  readSettle,
  readSlidingLog,
  releaseCall,
  replyBody,
  setDeadline,
  settleCall,
  startsValid,
  unexpectedReply,
  windowsCall,
} from './sliding-log-call.js'
import {
  type HoldRequest,
  keysGivenBack,
  type LeaseRequest,
  type LeaseResult,
  type RefundRequest,
  type SettleRequest,
  type SlotRequest,
  STORE,
  type Store,
  type StorePlan,
  type StoreRefund,
  type StoreSettle,
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

const REDIS_STORE_OPTION_NAMES = optionNames<RedisStoreOptions>({ prefix: true, breaker: true, maxInFlight: true })

const PREFIX_PATTERN = /^[^\s{}]{1,64}$/

/**
 * The fleet store: every decision is one script call (lua/sliding-log.lua, for one policy or several at
 * once; lua/bucketed.lua) on the given client: an ioredis `Redis` or `Cluster`, or a node-redis (5 or later)
 * client or cluster. It is used as it is: fleetlimit defines nothing on it, never connects it and never closes it.
 *
 * @example
 * ```ts
 * const store = redisStore(new Redis(process.env.REDIS_URL), { prefix: 'myapp' })
 * // node-redis
 * const client = createClient({ url: process.env.REDIS_URL })
 * client.on('error', (error) => console.error(error))
 * await client.connect()
 * const store = redisStore(client, { prefix: 'myapp' })
 * ```
 */
export function redisStore(client: RedisStoreClient, options: RedisStoreOptions = {}): Store {
  const adapter = adaptClient(client)
  if (!adapter) {
    throw new OptionError(
      'redisStore(client)',
      client,
      'an ioredis (or iovalkey) Redis or Cluster, a node-redis client or cluster, or a @valkey/valkey-glide GlideClient or GlideClusterClient',
    )
  }
  checkOptionNames(options, 'redisStore', REDIS_STORE_OPTION_NAMES)
  const prefix = options.prefix ?? 'fleetlimit'
  if (typeof prefix !== 'string' || !PREFIX_PATTERN.test(prefix)) {
    throw new OptionError('redisStore.prefix', prefix, '1 to 64 characters with no whitespace and no `{` or `}`')
  }

  // On a Cluster, one breaker per master, found from the key's slot in the client's own slot map.
  const { serverOf } = adapter
  const servers = createServerSet(
    {
      ...(options.breaker !== undefined && { breaker: options.breaker }),
      ...(options.maxInFlight !== undefined && { maxInFlight: options.maxInFlight }),
    },
    serverOf,
  )
  const runner = createScriptRunner(client)
  // The sliding-log calls this process makes at once go as one script run (per slot on a Cluster).
  const groupOf = adapter.cluster ? (key: string) => String(clusterSlot(key)) : () => ''
  const batcher = createCallBatcher(runner, groupOf)
  // One watcher per client, however many stores share it: a store adds no listener of its own.
  const connection = adapter.watch()
  // node-redis writes a turn's commands at its end (see store/clients/): readySince then says when a held-up write
  // went out.
  const runBefore = createRunBefore(serverOf, connection, adapter.library === 'node-redis')
  // A client ready again after a lost connection: open breakers probe at the next call, not after their cool-down.
  connection.onReady(servers.probeNow)

  const channels = createRedisChannels(adapter, prefix)
  const { announceChange: announce, slotChannel } = channels

  const keysOf = (requests: readonly WindowRequest[]) => requests.map((request) => `${prefix}:${request.key}`)

  /**
   * Sends a call of lua/sliding-log.lua with the deadline given, to the server runBefore names; its reply for
   * `windows` windows. `group`: the batch group of `keys`, where a plan keeps it.
   */
  const slidingLog =
    (keys: string[], bytes: Buffer, windows: number, group?: string) =>
    async (deadlineUs: number, server: string | undefined) => {
      setDeadline(bytes, deadlineUs)
      return readSlidingLog(await batcher.run(keys, bytes, replyBody(windows), server, group), windows)
    }

  /** A consume or peek of `requests`; with `plan`, a consume of that plan's keys and bytes. */
  async function decide(
    requests: readonly WindowRequest[],
    mode: 'consume' | 'peek',
    deadline?: Deadline,
    plan?: RedisPlan,
  ): Promise<WindowResult[]> {
    const keys = plan ? plan.keys : keysOf(requests)
    // A peek records nothing, so it needs no deadline.
    const until = mode === 'consume' ? deadline : undefined
    const [first] = requests
    if (first === undefined) return []
    if (requests.length === 1 && first.buckets !== undefined) {
      const { limit, windowMs, buckets, cost } = first
      const call = async (deadlineUs: number, server: string | undefined) => {
        const args = [limit, windowMs, buckets, cost, mode, deadlineUs, first.blockMs ?? 0]
        const reply = numbers(await runner.run(bucketedScript, keys, args, server), bucketedScript)
        return { status: reply[0] as number, nowUs: reply[4] as number, reply }
      }
      const { reply } = await runBefore(call, first.key, until)
      const result = toResult(reply, 0, reply[4] as number)
      // An admission's units are in the bucket of its time: that time is what a refund names.
      return [mode === 'consume' && result.allowed ? { ...result, recorded: reply[4] as number } : result]
    }
    // A copy of the plan's bytes: each call writes its own deadline into them.
    const template = plan?.bytes
    const bytes = template === undefined ? costWindowsCall(mode, requests) : Buffer.from(template)
    return (await runBefore(slidingLog(keys, bytes, requests.length, plan?.group), first.key, until)).windows
  }

  /** Frees slots ('f') or extends them ('e', to `ms` from now): how many were still held. */
  async function slotCall(slots: readonly SlotRequest[], bytes: Buffer): Promise<number> {
    if (slots.length === 0) return 0
    const keys = slots.map((slot) => `${prefix}:${slot.key}`)
    return readSlidingLog(await batcher.run(keys, bytes, 0), 0).units
  }

  async function settle(requests: readonly SettleRequest[], id: string, deadline?: Deadline): Promise<StoreSettle> {
    const [first] = requests
    if (first === undefined) return { outcome: 'expired', used: [] }
    const keys = requests.map((request) => `${prefix}:${request.key}`)
    keys.push(markerKey(keys[0] as string, id))
    const entries = requests.map((r) => ({ recordedUs: r.recorded, windowMs: scriptWindow(r), delta: r.delta }))
    const bytes = settleCall([...entries, { recordedUs: 0, windowMs: 0, delta: 0 }])
    const call = async (deadlineUs: number, server: string | undefined) => {
      setDeadline(bytes, deadlineUs)
      return readSettle(await batcher.run(keys, bytes, replyBody(requests.length, true), server), requests.length)
    }
    const { status, used } = await runBefore(call, first.key, deadline)
    const outcome = SETTLE_OUTCOMES[status]
    if (outcome === undefined) throw new StoreError(`unexpected settle status ${status} from Redis`)
    const settled = { outcome, used }
    const back = keysGivenBack(requests, settled)
    if (back.length > 0) channels.announceUnitsBack(back)
    return settled
  }

  async function lease(request: LeaseRequest, deadline?: Deadline): Promise<LeaseResult> {
    const { key, limit, windowMs, want, min, waitFor, ttlMs } = request
    const bytes = leaseCall(want, { limit, windowMs }, { min, waitFor, ttlMs })
    const reply = await runBefore(slidingLog([`${prefix}:${key}`], bytes, 1), key, deadline)
    const window = reply.windows[0] as WindowResult & { recordedUs: number }
    const { recordedUs } = window
    return { ...window, lease: { windowMs, score: recordedUs / 1000, granted: reply.units, recorded: recordedUs } }
  }

  const store: Store = {
    [STORE]: true,
    consume: (requests, deadline) => decide(requests, 'consume', deadline),
    lease,
    release: async (key, { windowMs, score, granted }, units) => {
      if (granted === 0) return
      // The score's µs, exactly: it came from them, and a double holds µs of this era to well under 0.5.
      const bytes = releaseCall(units, [{ recordedUs: Math.round(score * 1000), windowMs }])
      readSlidingLog(await batcher.run([`${prefix}:${key}`], bytes, 0), 0)
    },
    peek: (requests) => decide(requests, 'peek'),
    free: (slots) => slotCall(slots, freeCall(slots, slotChannel)),
    extend: (slots, ms) => slotCall(slots, extendCall(slots, ms)),
    settle,
    refund: async (requests: readonly RefundRequest[], units: number, id: string, deadline?: Deadline) => {
      const [first] = requests
      if (first === undefined) return { units: 0, outcome: 'expired' }
      // The admission's marker: it says what a settle of it moved, and is set in the run that removes the units,
      // so that the same refund sent again removes nothing more.
      const keys = requests.map((request) => `${prefix}:${request.key}`)
      if (first.buckets !== undefined) {
        keys.push(markerKey(keys[0] as string, id, 'refund'))
        const args = [1, first.windowMs, first.buckets, units, 'refund', 0, 0, first.recorded]
        const call = async (deadlineUs: number, server: string | undefined) => {
          args[5] = deadlineUs
          const reply = numbers(await runner.run(bucketedScript, keys, args, server), bucketedScript)
          return { status: reply[0] as number, nowUs: reply[4] as number, marked: reply[1] === 2 }
        }
        const reply = await runBefore(call, first.key, deadline)
        return refundOf(reply.marked ? ALREADY_REFUNDED : reply.status > 0 ? 1 : 0, reply.status)
      }
      keys.push(markerKey(keys[0] as string, id))
      const bytes = refundCall(requests, units)
      const reply = await runBefore(slidingLog(keys, bytes, 0), first.key, deadline)
      return refundOf(reply.status, reply.units)
    },
    hold: async (requests: readonly HoldRequest[], ms: number) => {
      const [first] = requests
      if (first === undefined) return
      const keys = requests.map((request) => `${prefix}:${request.key}`)
      if (first.buckets !== undefined) {
        // A bucketed window is decided alone, so it is held alone.
        await runner.run(bucketedScript, keys, [1, first.windowMs, first.buckets, ms, 'hold', 0, 0])
      } else {
        const bytes = windowsCall(
          'z',
          ms,
          requests.map((r) => ({ limit: 0, windowMs: scriptWindow(r) })),
        )
        readSlidingLog(await batcher.run(keys, bytes, 0), 0)
      }
      await announce(requests.map((request) => request.key))
    },
    ...noteCalls(runner, prefix, announce),
    reset: async (key) => {
      await adapter.del(`${prefix}:${key}`)
      await announce([key])
    },
    onKeyChange: channels.onKeyChange,
    onSlotFree: channels.onSlotFree,
    onUnitsBack: channels.onUnitsBack,
    isConnected: connection.connected,
    lastError: connection.lastError,
    readySince: connection.readySince,
  }
  return guardStore(withPlans(store, keysOf, groupOf, decide), servers)
}

/**
 * A key's calls keep their keys with the prefix (see Store.plan). Not enumerable: a copy of the store made to
 * replace its consume (`{ ...store, consume }`) decides through it.
 */
function withPlans(
  store: Store,
  keysOf: (requests: readonly WindowRequest[]) => string[],
  groupOf: (key: string) => string,
  decide: (
    requests: readonly WindowRequest[],
    mode: 'consume',
    deadline: Deadline | undefined,
    plan: RedisPlan,
  ) => Promise<WindowResult[]>,
): Store {
  const planOf = (requests: readonly WindowRequest[]): RedisPlan => {
    const [first] = requests
    const bucketed = requests.length === 1 && first?.buckets !== undefined
    const now = Date.now()
    const keys = keysOf(requests)
    return {
      requests,
      keys,
      group: groupOf(keys[0] ?? ''),
      bytes: bucketed ? undefined : costWindowsCall('consume', requests, now),
      ...startsValid(requests, now),
    }
  }
  return Object.defineProperties(store, {
    plan: { value: planOf },
    decide: {
      value(plan: RedisPlan, deadline?: Deadline) {
        if (plan.until !== Number.POSITIVE_INFINITY) {
          // A calendar window's bytes name the periods around the caller's now: made again once it left them.
          const now = Date.now()
          if (now >= plan.until || now < plan.from) {
            plan.bytes = costWindowsCall('consume', plan.requests, now)
            Object.assign(plan, startsValid(plan.requests, now))
          }
        }
        return decide(plan.requests, 'consume', deadline, plan)
      },
    },
  })
}

/**
 * A redisStore's plan of a key's calls: its requests, their keys with the prefix and batch group (on a Cluster, their
 * slot), and the bytes of a consume of lua/sliding-log.lua (with no deadline yet), when the script is that one; with
 * calendar windows, the caller's time span (ms) in which those bytes name the current period.
 */
interface RedisPlan extends StorePlan {
  readonly keys: string[]
  readonly group: string
  bytes: Buffer | undefined
  from: number
  until: number
}

/** A window as a release, settle or hold of lua/sliding-log.lua names it: a calendar period's as -1. */
const scriptWindow = (r: { readonly windowMs: number; readonly period?: boolean | undefined }) =>
  r.period ? PERIOD_WINDOW : r.windowMs

/** A refund's release call: each window's entry, then its marker's, (0, 0): no window is 0 ms long. */
const refundCall = (requests: readonly RefundRequest[], units: number) =>
  releaseCall(units, [
    ...requests.map((r) => ({ recordedUs: r.recorded, windowMs: scriptWindow(r), units: r.units ?? units })),
    { recordedUs: 0, windowMs: 0 },
  ])

/** lua/bucketed.lua's reply: its five numbers. */
export function numbers(reply: unknown, script: LuaScript): number[] {
  if (!Array.isArray(reply) || reply.length !== 5 || !reply.every((n) => typeof n === 'number')) {
    throw unexpectedReply(reply, script)
  }
  return reply as number[]
}

/**
 * The marker key of an admission settled or refunded (lua/sliding-log.lua's 'receipt', one for both), or of a
 * bucketed window's refund, in the slot of `key` (with its prefix): after its hash tag (the tenant's, in every key
 * a limiter builds), or around a key with none. No window key has this shape.
 */
function markerKey(key: string, id: string, kind: 'receipt' | 'refund' = 'receipt'): string {
  const open = key.indexOf('{')
  const tagged = open !== -1 && key.indexOf('}', open + 1) > open + 1
  return tagged ? `${key}:${kind}:${id}` : `{${key}}:${kind}:${id}`
}

// lua/sliding-log.lua's statuses of a release: 1 released, 0 none (expired), 2 its marker was set, 3 too deep.
const ALREADY_REFUNDED = 2
const REFUND_OUTCOMES = ['expired', 'refunded', 'already-refunded', 'too-deep'] as const
// And of a settle: 1 settled, 0 no window holds the entry, 2 settled before, 3 too deep, 4 refunded before.
const SETTLE_OUTCOMES = ['expired', 'settled', 'already-settled', 'too-deep', 'refunded'] as const

function refundOf(status: number, units: number): StoreRefund {
  const outcome = REFUND_OUTCOMES[status]
  if (outcome === undefined) throw new StoreError(`unexpected refund status ${status} from Redis`)
  return { units: outcome === 'refunded' ? units : 0, outcome }
}

export const toResult = (reply: number[], at: number, nowUs: number): WindowResult => ({
  allowed: reply[at] === 1,
  remaining: reply[at + 1] as number,
  retryAfterMs: reply[at + 2] as number,
  resetMs: reply[at + 3] as number,
  now: nowUs / 1000,
})
