// The accuracy part's limiters, each behind its framework's middleware on an ioredis client of its own: the
// peers as peers.ts mounts them, fleetlimit in four configurations through @fleetlimit/express. Every server
// counts `GET /` under the request's `x-key` header and notes when each admission was made.
import { createRateLimiter, type LocalOptions, type RateLimiter, redisStore } from '@fleetlimit/core'
import { recordingStore } from '@fleetlimit/test-kit/recording-store'
import { Redis } from 'ioredis'
import { fleetlimitGuard } from './fleetlimit-guard.js'
import { PEERS, type PeerId } from './peers.js'
import { type BenchServer, type KeyOf, startServer } from './servers.js'

type OurId = 'fleetlimit-store' | 'fleetlimit-deny-cache' | 'fleetlimit-lease' | 'fleetlimit-bucketed'
export type LimiterId = PeerId | OurId

export interface LimiterInfo {
  readonly id: LimiterId
  readonly name: string
  readonly algorithm: string
  /** What the admission times of this limiter's rows are. */
  readonly basis: string
}

const HANDLER = 'handler ran (server process clock)'
const DECISION = 'store decision (Redis clock); lease admissions: process clock'

const OURS: readonly { readonly id: OurId; readonly name: string; readonly algorithm: string }[] = [
  { id: 'fleetlimit-store', name: 'fleetlimit, local: false', algorithm: 'sliding log (server clock)' },
  { id: 'fleetlimit-deny-cache', name: 'fleetlimit, deny cache (default)', algorithm: 'sliding log (server clock)' },
  { id: 'fleetlimit-lease', name: "fleetlimit, lease: 'auto'", algorithm: 'sliding log (server clock) + leases' },
  {
    id: 'fleetlimit-bucketed',
    name: "fleetlimit, algorithm: 'bucketed'",
    algorithm: 'bucketed, 60 buckets (server clock)',
  },
]

export const LIMITERS: readonly LimiterInfo[] = [
  ...PEERS.map(({ id, name, algorithm }) => ({ id, name, algorithm, basis: HANDLER })),
  ...OURS.map((ours) => ({ ...ours, basis: DECISION })),
]

export interface LimitedServer {
  readonly port: number
  /** Times (epoch ms) of every admission on the row's basis: store decisions for fleetlimit, else the handler's. */
  readonly admissions: number[]
  /** Times (epoch ms) at which the handler behind the limiter ran. */
  readonly handlerTimes: number[]
  /** Forgets the times noted so far (a warm-up's). */
  forget(): void
  close(): Promise<void>
}

export interface LimitedServerOptions {
  readonly redisUrl: string
  readonly limit: number
  readonly windowMs: number
}

/** The wall clock, which on one machine is the clock Redis's TIME reads. */
export const wallNow = () => performance.timeOrigin + performance.now()

/** The key every limiter counts under: the request's `x-key` header, so a warm-up can use another one. */
const keyOf: KeyOf = (headers) => String(headers['x-key'] ?? 'bench')

export async function startLimitedServer(id: LimiterId, options: LimitedServerOptions): Promise<LimitedServer> {
  const redis = new Redis(options.redisUrl)
  const { limit, windowMs } = options
  const handlerTimes: number[] = []
  let admissions = handlerTimes
  const peer = PEERS.find((p) => p.id === id)
  let server: BenchServer
  const onHandler = () => handlerTimes.push(wallNow())
  if (peer) {
    const guard = await peer.createGuard(redis, { limit, windowMs, key: keyOf })
    server = await startServer(peer.framework, { guard, onHandler })
  } else {
    const recording = ours(id as OurId, redis, options)
    admissions = recording.admissions
    server = await startServer('Express', { guard: fleetlimitGuard('Express', recording.limiter, keyOf), onHandler })
  }
  return {
    port: server.port,
    admissions,
    handlerTimes,
    forget() {
      admissions.length = 0
      handlerTimes.length = 0
    },
    async close() {
      await server.close()
      redis.disconnect()
    },
  }
}

/** A fleetlimit limiter whose every admission is noted: on the store's clock, or this process's for a lease's. */
function ours(id: OurId, redis: Redis, { limit, windowMs }: LimitedServerOptions) {
  const recording = recordingStore(redisStore(redis))
  const local: LocalOptions | false | undefined =
    id === 'fleetlimit-store' ? false : id === 'fleetlimit-lease' ? { lease: 'auto' } : undefined
  const limiter = createRateLimiter({
    store: recording.store,
    limit,
    window: `${windowMs}ms`,
    ...(local !== undefined && { local }),
    ...(id === 'fleetlimit-bucketed' && { algorithm: 'bucketed' as const }),
  })
  const noting = new Proxy(limiter, {
    get(target, property, receiver) {
      if (property !== 'consume') return Reflect.get(target, property, receiver)
      const consume: RateLimiter['consume'] = async (key, consumeOptions) => {
        const decision = await target.consume(key, consumeOptions)
        if (decision.allowed && decision.source === 'local') recording.admissions.push(wallNow())
        return decision
      }
      return consume
    },
  })
  return { limiter: noting, admissions: recording.admissions }
}
