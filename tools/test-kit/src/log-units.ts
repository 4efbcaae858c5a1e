import type { Cluster, Redis } from 'ioredis'

// lua/sliding-log.lua's header, the last 85 bytes of a log: base (double), n, head, cum0, total, ...
const HEADER = 85

/**
 * The units recorded in a sliding-log key and not yet dropped from it (those of its last window, when it was
 * last written), read from the log's header: 0 for a missing key.
 */
export async function logUnits(client: Redis | Cluster, key: string): Promise<number> {
  const raw = await client.getrangeBuffer(key, -HEADER, -1)
  if (raw.length !== HEADER) return 0
  const cum0 = raw.readUInt32BE(16)
  const total = raw.readUInt32BE(20)
  return (total - cum0 + 2 ** 32) % 2 ** 32
}
