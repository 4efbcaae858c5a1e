import type { Window } from './degraded.js'

/** Which acquire queues wait on which slot keys, so that a slot freed on a key wakes exactly those. */
export function createSlotWaits(wake: (queueKey: string) => void) {
  const queuesByKey = new Map<string, Set<string>>()
  const keysByQueue = new Map<string, readonly string[]>()
  return {
    /** A queue waits on its windows' slot keys (none for a call without in-flight windows). */
    add(queueKey: string, windows: readonly Window[]): void {
      if (keysByQueue.has(queueKey)) return
      const keys = windows.filter((w) => w.policy.concurrency !== undefined).map((w) => w.key)
      if (keys.length === 0) return
      keysByQueue.set(queueKey, keys)
      for (const key of keys) {
        let queues = queuesByKey.get(key)
        if (!queues) {
          queues = new Set()
          queuesByKey.set(key, queues)
        }
        queues.add(queueKey)
      }
    },
    forget(queueKey: string): void {
      const keys = keysByQueue.get(queueKey)
      if (!keys) return
      keysByQueue.delete(queueKey)
      for (const key of keys) {
        const queues = queuesByKey.get(key)
        queues?.delete(queueKey)
        if (queues?.size === 0) queuesByKey.delete(key)
      }
    },
    /** Slots were freed on `keys`; undefined: on any key (messages may have been missed). */
    freed(keys: readonly string[] | undefined): void {
      if (keys === undefined) {
        for (const queueKey of [...keysByQueue.keys()]) wake(queueKey)
        return
      }
      for (const key of keys) for (const queueKey of [...(queuesByKey.get(key) ?? [])]) wake(queueKey)
    },
  }
}
