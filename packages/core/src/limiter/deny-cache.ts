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
  /** Set once the cache dropped it: a plan that kept it (DenialSlot) looks its id up again. */
  dropped: boolean
  /** The answer last made from it (see local-tier.ts agedDenial). */
  aged: Decision | undefined
}

/** Where a call's plan keeps the entry it found last, so that its next call needs no lookup while it stands. */
export interface DenialSlot {
  denial: DenyEntry | undefined
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
 * least-recently-used map of at most `max` entries. Ids of several keys are indexed by each of their keys, so a
 * key change costs what the entries of its keys cost, however many are cached.
 */
export function createDenyCache(max: number): DenyCache {
  const entries = new Map<string, DenyEntry>()
  // Per key of a compound id: that id, or the ids (a tenant-wide policy's key is in one per route).
  const byKey = new Map<string, string | Set<string>>()
  let visits = 0

  function index(id: string): void {
    for (const key of id.split(' ')) {
      const ids = byKey.get(key)
      if (ids === undefined) byKey.set(key, id)
      else if (typeof ids === 'string') byKey.set(key, new Set([ids, id]))
      else ids.add(id)
    }
  }

  function unindex(id: string): void {
    for (const key of id.split(' ')) {
      const ids = byKey.get(key)
      if (ids === id) byKey.delete(key)
      else if (typeof ids === 'object') {
        ids.delete(id)
        if (ids.size === 1) byKey.set(key, ids.values().next().value as string)
      }
    }
  }

  /** Lets `id`'s entry go, marked so that a plan that kept it looks again; false when none was cached. */
  function drop(id: string): boolean {
    const entry = entries.get(id)
    if (entry === undefined) return false
    entry.dropped = true
    entries.delete(id)
    return true
  }

  function remove(id: string): void {
    if (drop(id) && id.includes(' ')) unindex(id)
  }

  return {
    get size() {
      return entries.size
    },
    get visits() {
      return visits
    },
    get: (id) => entries.get(id),
    set(id, entry) {
      const replaced = drop(id)
      entry.dropped = false
      entries.set(id, entry)
      if (!replaced && id.includes(' ')) index(id)
      // Oldest first: a Map keeps insertion order, so this is a least-recently-used bound.
      if (entries.size > max) remove(entries.keys().next().value as string)
    },
    delete: remove,
    dropKeys(keys) {
      for (const key of keys) {
        if (drop(key)) visits++
        const ids = byKey.get(key)
        if (ids === undefined) continue
        byKey.delete(key)
        if (typeof ids === 'string') {
          visits++
          remove(ids)
        } else {
          for (const id of ids) {
            visits++
            remove(id)
          }
        }
      }
    },
    clear() {
      for (const entry of entries.values()) entry.dropped = true
      entries.clear()
      byKey.clear()
    },
  }
}
