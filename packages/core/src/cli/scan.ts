import type { Redis } from 'ioredis'

/**
 * Yields the keys matching `pattern` on each server, by SCAN (never KEYS: a large keyspace is walked in steps
 * that do not block the server). A key may come twice from one server (SCAN's guarantee is at least once).
 */
export async function* scanKeys(servers: readonly Redis[], pattern: string): AsyncGenerator<string> {
  for (const server of servers) {
    let cursor = '0'
    do {
      const [next, keys] = await server.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
      cursor = next
      yield* keys
    } while (cursor !== '0')
  }
}
