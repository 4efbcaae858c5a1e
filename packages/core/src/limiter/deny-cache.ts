import type { Decision } from './decision.js'

/**
 * The limits a call is decided under (its limit, or its policies' limits joined): a local answer made under
 * some limits serves only calls under the same ones, so a tenant whose plan differs is never answered from
 * another plan's denial or lease.
 */
export type Limits = number | string

export interface DenyEntry {
  /** Local time until which the store's answer stands, the cost and limits it was for, and the answer. */
  readonly until: number
  readonly cost: number
  readonly limits: Limits
  readonly decision: Decision
  readonly at: number
}

export interface DenyCache {
  readonly size: number
  /** How many cached entries key changes looked at so far: what they cost. */
  readonly visits: number
  get(id: string): DenyEntry | undefined
  /** Caches an entry as the most recently used; the least recently used goes past the bound. */
  set(id: string, entry: DenyEntry): void
  delete(id: string): void
  /** Drops every entry whose id names one of `keys`. */
  dropKeys(keys: readonly string[]): void
  clear(): void
}

/**
 * The store's denials, by call id (a store key, or the keys of several policies joined by spaces), as a
 * least-recently-used map of at most `max` entries.
 */
export function createDenyCache(max: number): DenyCache {
  const entries = new Map<string, DenyEntry>()
  // Ids of several keys seen: a change of one key drops them too.
  let compound = false
  let visits = 0

  return {
    get size() {
      return entries.size
    },
    get visits() {
      return visits
    },
    get: (id) => entries.get(id),
    set(id, entry) {
      compound ||= id.includes(' ')
      entries.delete(id)
      entries.set(id, entry)
      // Oldest first: a Map keeps insertion order, so this is a least-recently-used bound.
      if (entries.size > max) entries.delete(entries.keys().next().value as string)
    },
    delete(id) {
      entries.delete(id)
    },
    dropKeys(keys) {
      for (const key of keys) {
        if (entries.has(key)) visits++
        entries.delete(key)
      }
      if (!compound) return
      const changed = new Set(keys)
      for (const id of entries.keys()) {
        visits++
        if (id.includes(' ') && id.split(' ').some((key) => changed.has(key))) entries.delete(id)
      }
    },
    clear() {
      entries.clear()
    },
  }
}
