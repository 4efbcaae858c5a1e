// Bottleneck's nearest equivalent of a fleet's quota, for the outbound workers: a reservoir of `limit` refilled
// every window, shared through its Redis clustering.
import Bottleneck from 'bottleneck'

export interface ReservoirConfig {
  readonly key: string
  readonly redisUrl: string
  readonly limit: number
  readonly windowMs: number
}

/** A clustered Bottleneck with a reservoir of `limit` per window, ready; its errors go to `record`. */
export async function clusteredReservoir(
  config: ReservoirConfig,
  record: (error: unknown) => void,
): Promise<Bottleneck> {
  const { hostname, port } = new URL(config.redisUrl)
  const limiter = new Bottleneck({
    id: config.key,
    datastore: 'ioredis',
    clientOptions: { host: hostname, port: Number(port) },
    reservoir: config.limit,
    reservoirRefreshAmount: config.limit,
    reservoirRefreshInterval: config.windowMs,
    // Clustering refills the reservoir on a heartbeat, 5 s by default (its README asks for refresh intervals that
    // are multiples of 5 s): 250 ms, its in-process default, lets it refill every second.
    heartbeatInterval: 250,
  })
  limiter.on('error', record)
  await limiter.ready()
  return limiter
}
