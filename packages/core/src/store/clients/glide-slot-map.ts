import { clusterSlot } from '../cluster-slot.js'
import type { ValkeyGlideClient } from './glide-client.js'
import type { GlideHealth } from './glide-health.js'

// How often the map is read again: GLIDE follows MOVED and ASK itself, so a stale map only groups a moved slot's
// calls under its former master's breaker and script cache (a NOSCRIPT there costs one EVAL) until then.
const REFRESH_MS = 30_000

/**
 * Each slot's master, read with CLUSTER SLOTS (GLIDE keeps its own map to itself): at once, every REFRESH_MS, and
 * when the client answers again after a failure. Until the first answer every key's server is '' (one breaker).
 */
export function glideSlotMap(client: ValkeyGlideClient, health: GlideHealth) {
  let masters: readonly string[] = []
  const read = () => {
    client.customCommand(['CLUSTER', 'SLOTS'], { route: 'randomNode', decoder: 1 }).then(
      (reply) => {
        masters = mastersOf(reply) ?? masters
      },
      () => {},
    )
  }
  read()
  const timer = setInterval(() => (health.closed() ? clearInterval(timer) : read()), REFRESH_MS)
  timer.unref()
  health.onRecovered(read)
  return {
    serverOf: (key: string) => masters[clusterSlot(key)] ?? '',
  }
}

/** CLUSTER SLOTS' reply ([from, to, [host, port, id], …replicas] per range) as each slot's master's address. */
function mastersOf(reply: unknown): string[] | undefined {
  if (!Array.isArray(reply)) return undefined
  const masters: string[] = []
  for (const range of reply) {
    if (!Array.isArray(range)) return undefined
    const [from, to, master] = range as [unknown, unknown, unknown]
    if (typeof from !== 'number' || typeof to !== 'number' || !Array.isArray(master)) return undefined
    const address = `${String(master[0])}:${String(master[1])}`
    for (let slot = from; slot <= to; slot++) masters[slot] = address
  }
  return masters
}
