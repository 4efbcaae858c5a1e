// The overhead part's servers for one framework: one per limiter and load, each Redis limiter on an ioredis
// connection of its own, as an application has. The peers are those of peers.ts and memory-peers.ts that run
// on the framework.
import { once } from 'node:events'
import {
  createRateLimiter,
  type LimiterStats,
  type LocalOptions,
  memoryStore,
  redisStore,
  type Store,
} from '@fleetlimit/core'
import { Redis } from 'ioredis'
import { fleetlimitGuard } from './fleetlimit-guard.js'
import { MEMORY_PEERS, type MemoryPeerId } from './memory-peers.js'
import { FLOOR, floorGuard } from './overhead-floor.js'
import { PEERS, type PeerId } from './peers.js'
import { type BenchServer, type Framework, type Guard, type KeyOf, startServer } from './servers.js'

export type LoadName = 'admitted' | 'denied' | 'hot tenants' | 'cold keys'

export interface Load {
  readonly limit: number
  readonly windowMs: number
  /** Distinct `x-tenant` values the load generator cycles through; fleetlimit keys by it when `byHeader`. */
  readonly tenants: number
  readonly byHeader: boolean
  /** The status every measured response should have. */
  readonly status: number
}

export const LOADS: Readonly<Record<LoadName, Load>> = {
  // Far above the load: every request admitted, one key (the client IP) for every limiter.
  admitted: { limit: 1_000_000_000, windowMs: 60_000, tenants: 1, byHeader: false, status: 200 },
  // A limit of 1 per hour, exhausted during the warm-up: every measured request denied.
  denied: { limit: 1, windowMs: 3_600_000, tenants: 1, byHeader: false, status: 429 },
  'hot tenants': { limit: 1_000_000_000, windowMs: 60_000, tenants: 4, byHeader: true, status: 200 },
  'cold keys': { limit: 1_000_000_000, windowMs: 60_000, tenants: 5_000, byHeader: true, status: 200 },
}

export const STORE_ONLY = 'fleetlimit, store only'
export const LOCAL_TIER = 'fleetlimit, local tier'
export const MEMORY_STORE = 'fleetlimit, memory store'
export type LimiterName =
  | PeerId
  | MemoryPeerId
  | typeof STORE_ONLY
  | typeof LOCAL_TIER
  | typeof MEMORY_STORE
  | typeof FLOOR

/** Whether a limiter keeps its counts in the server's process rather than in Redis. */
export const inMemory = (limiter: LimiterName) =>
  limiter === MEMORY_STORE || limiter === FLOOR || MEMORY_PEERS.some((peer) => peer.id === limiter)

/** The local tier as a hot key would use it: the deny cache (on by default) and auto-sized leases. */
const LOCAL: LocalOptions = { lease: 'auto' }
const byTenant: KeyOf = (headers) => String(headers['x-tenant'])

export interface Cell {
  readonly limiter: LimiterName
  readonly load: LoadName
  readonly server: BenchServer
  /** The limiter's own Redis connection; none for an in-memory one. */
  readonly client?: Redis
  /** fleetlimit only: its limiter's counters. */
  readonly stats?: () => LimiterStats
}

/** Every limiter on the framework with the loads it is measured under: the peers at two, fleetlimit at up to four. */
function plan(framework: Framework): [LimiterName, LoadName[]][] {
  return [
    ...PEERS.filter((peer) => peer.framework === framework).map((peer): [LimiterName, LoadName[]] => [
      peer.id,
      ['admitted', 'denied'],
    ]),
    [STORE_ONLY, ['admitted', 'denied']],
    [LOCAL_TIER, ['admitted', 'denied', 'hot tenants', 'cold keys']],
    ...MEMORY_PEERS.filter((peer) => peer.frameworks.includes(framework)).map((peer): [LimiterName, LoadName[]] => [
      peer.id,
      ['admitted', 'denied'],
    ]),
    [MEMORY_STORE, ['admitted', 'denied']],
    [FLOOR, ['admitted', 'denied']],
  ]
}

/** `only`: the limiters to start, all of them if absent. */
export async function startCells(
  framework: Framework,
  redisUrl: string,
  only?: (limiter: LimiterName) => boolean,
): Promise<Cell[]> {
  const cells: Cell[] = []
  try {
    for (const [limiter, loads] of plan(framework)) {
      if (only && !only(limiter)) continue
      for (const loadName of loads) {
        const load = LOADS[loadName]
        const options = { limit: load.limit, windowMs: load.windowMs }
        const memoryPeer = MEMORY_PEERS.find((p) => p.id === limiter)
        const client = inMemory(limiter) ? undefined : new Redis(redisUrl)
        if (client) await once(client, 'ready')
        // Distinct prefixes, so that no two servers share a key.
        const prefix = `overhead-${framework}-${cells.length}`.toLowerCase()
        let guard: Guard
        let stats: (() => LimiterStats) | undefined
        const peer = PEERS.find((p) => p.id === limiter)
        if (peer && client) {
          guard = await peer.createGuard(client, { ...options, prefix: `${prefix}:` })
        } else if (memoryPeer) {
          guard = memoryPeer.createGuard(framework, options)
        } else if (limiter === FLOOR) {
          guard = floorGuard(framework, options)
        } else {
          // The memory store as the quick starts set it up: the local tier's defaults.
          const store: Store = client ? redisStore(client, { prefix }) : memoryStore()
          const rateLimiter = createRateLimiter({
            store,
            limit: load.limit,
            window: load.windowMs,
            ...(client && { local: limiter === LOCAL_TIER ? LOCAL : false }),
          })
          guard = fleetlimitGuard(framework, rateLimiter, load.byHeader ? byTenant : undefined)
          stats = () => rateLimiter.stats()
        }
        const server = await startServer(framework, { guard })
        cells.push({ limiter, load: loadName, server, ...(client && { client }), ...(stats && { stats }) })
      }
    }
  } catch (error) {
    await closeCells(cells)
    throw error
  }
  return cells
}

export async function closeCells(cells: readonly Cell[]): Promise<void> {
  for (const cell of cells) {
    await cell.server.close()
    cell.client?.disconnect()
  }
}
