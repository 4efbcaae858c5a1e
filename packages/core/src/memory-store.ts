import { BucketCounter } from './bucket-counter.js'
import { OptionError } from './errors.js'
import { checkInteger, checkOptionNames } from './options.js'
import { SlidingLog } from './sliding-log.js'
import {
  type Lease,
  type LeaseRequest,
  type LeaseResult,
  STORE,
  type Store,
  type WindowRequest,
  type WindowResult,
} from './store.js'

export interface MemoryStoreOptions {
  /** The clock, in ms. Default: a monotonic clock. Inject one for tests. */
  clock?: () => number
  /** How often, at most, idle keys are swept (on a later call; no timer runs). Default 10000 ms. */
  sweepIntervalMs?: number
}

export interface MemoryStore extends Store {
  /** Keys held now, idle ones included until the next sweep. */
  readonly size: number
  /** Drops every key whose window holds nothing; returns how many were dropped. */
  sweep(): number
  lease(request: LeaseRequest): Promise<LeaseResult>
  release(key: string, lease: Lease, units: number): Promise<void>
}

interface Entry {
  readonly log: SlidingLog
  /** Set instead of `log` use for the bucketed algorithm. */
  readonly counter: BucketCounter | undefined
  windowMs: number
  buckets: number
}

const monotonicNow = () => performance.timeOrigin + performance.now()

/**
 * The embedded store: the same decisions as the Redis scripts, for one process. Memory stays bounded:
 * a key whose window is empty is dropped by a sweep that runs on a later call.
 */
export function memoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  checkOptionNames(options, 'memoryStore', ['clock', 'sweepIntervalMs'])
  const clock = options.clock ?? monotonicNow
  if (typeof clock !== 'function') throw new OptionError('memoryStore.clock', clock, 'a function returning ms')
  const sweepIntervalMs = checkInteger(options.sweepIntervalMs ?? 10_000, 'memoryStore.sweepIntervalMs', 1, 86_400_000)

  const entries = new Map<string, Entry>()
  let lastSweep = clock()

  function sweep(): number {
    const now = clock()
    lastSweep = now
    let dropped = 0
    for (const [key, entry] of entries) {
      const empty = entry.counter
        ? entry.counter.isEmpty(now, entry.windowMs, entry.buckets)
        : entry.log.used(now, entry.windowMs) === 0
      if (empty) {
        entries.delete(key)
        dropped++
      }
    }
    return dropped
  }

  function entryOf(request: { readonly key: string; readonly windowMs: number; readonly buckets?: number }): Entry {
    let entry = entries.get(request.key)
    if (!entry) {
      const counter = request.buckets === undefined ? undefined : new BucketCounter()
      entry = { log: new SlidingLog(), counter, windowMs: request.windowMs, buckets: request.buckets ?? 0 }
      entries.set(request.key, entry)
    }
    entry.windowMs = request.windowMs
    return entry
  }

  /** All the windows admit together, or none records anything: the contract of the multi-key script. */
  function decide(requests: readonly WindowRequest[], record: boolean): WindowResult[] {
    const now = clock()
    if (now - lastSweep >= sweepIntervalMs) sweep()
    const [only] = requests
    if (requests.length === 1 && only?.buckets !== undefined) {
      const { counter } = entryOf(only)
      const result = (counter as BucketCounter).decide(now, only.limit, only.windowMs, only.buckets, only.cost, record)
      if (!result.allowed || !record) {
        if ((counter as BucketCounter).isEmpty(now, only.windowMs, only.buckets)) entries.delete(only.key)
      }
      return [result]
    }
    const windows = requests.map((request) => {
      const { log } = entryOf(request)
      return { request, log, used: log.used(now, request.windowMs) }
    })
    const recorded = record && windows.every(({ request, used }) => used + request.cost <= request.limit)
    if (recorded) for (const { request, log } of windows) log.add(now, request.cost)
    const results = windows.map(({ request, log, used }) =>
      log.result(now, request.limit, request.windowMs, request.cost, used, recorded),
    )
    // A peek or a denial must not leave empty entries behind.
    for (const { request, used } of windows) if (used === 0 && !recorded) entries.delete(request.key)
    return results
  }

  /** lua/lease.lua's model: units scored at the lease's expiry, so each use before it stays covered. */
  function lease(request: LeaseRequest): LeaseResult {
    const now = clock()
    const { log } = entryOf(request)
    const used = log.used(now, request.windowMs)
    const available = request.limit - used
    if (available >= request.min) {
      const granted = Math.min(request.want, available)
      const score = now + request.ttlMs
      log.add(score, granted)
      const { resetMs } = log.result(now, request.limit, request.windowMs, 0, used + granted, true)
      return {
        allowed: true,
        remaining: available - granted,
        retryAfterMs: 0,
        resetMs,
        now,
        lease: { id: '', score, granted },
      }
    }
    const denied = log.result(now, request.limit, request.windowMs, request.waitFor, used, false)
    if (used === 0) entries.delete(request.key)
    return { ...denied, allowed: false, lease: { id: '', score: 0, granted: 0 } }
  }

  return {
    [STORE]: true,
    consume: async (requests) => decide(requests, true),
    lease: async (request) => lease(request),
    release: async (key, { score }, units) => {
      entries.get(key)?.log.remove(score, units)
    },
    peek: async (requests) => decide(requests, false),
    reset: async (key) => {
      entries.delete(key)
    },
    sweep,
    get size() {
      return entries.size
    },
  }
}
