import { OptionError } from './errors.js'
import { checkInteger, checkOptionNames } from './options.js'
import { SlidingLog } from './sliding-log.js'
import { STORE, type Store, type WindowRequest, type WindowResult } from './store.js'

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
}

interface Entry {
  readonly log: SlidingLog
  windowMs: number
}

const monotonicNow = () => performance.timeOrigin + performance.now()

/**
 * The embedded store: the same decisions as the Redis script, for one process. Memory stays bounded:
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
      if (entry.log.isEmpty(now, entry.windowMs)) {
        entries.delete(key)
        dropped++
      }
    }
    return dropped
  }

  function decide(request: WindowRequest, record: boolean): WindowResult {
    const now = clock()
    if (now - lastSweep >= sweepIntervalMs) sweep()
    let entry = entries.get(request.key)
    if (!entry) {
      if (!record) return { allowed: true, remaining: request.limit, retryAfterMs: 0, resetMs: 0, now }
      entry = { log: new SlidingLog(), windowMs: request.windowMs }
      entries.set(request.key, entry)
    }
    entry.windowMs = request.windowMs
    return entry.log.decide(now, request.limit, request.windowMs, request.cost, record)
  }

  return {
    [STORE]: true,
    consume: async (request) => decide(request, true),
    peek: async (request) => decide(request, false),
    reset: async (key) => {
      entries.delete(key)
    },
    sweep,
    get size() {
      return entries.size
    },
  }
}
