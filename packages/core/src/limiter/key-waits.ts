import type { Store } from '../store/store.js'
import type { Window } from './degraded.js'

/** What a store says of room coming back on keys anywhere. */
type RoomSignals = Pick<Store, 'onSlotFree' | 'onKeyChange' | 'onUnitsBack'>

/**
 * Which acquire queues wait on which store keys, so that room coming back on a key wakes exactly those: a slot
 * freed, or units a settle gave back (here, or the store's message of either from anywhere). From `store`, it
 * hears of slots freed (and of resets, which free a key's slots) when `slots` (the limiter has in-flight
 * policies), and of units given back once a first queue waits (a subscription, on Redis).
 */
export function createKeyWaits(wake: (queueKey: string) => void, store: RoomSignals = {}, slots = false) {
  // Every window key of a waiting queue, to its queues; and each queue's keys, and its slot keys (if any).
  const queuesByKey = new Map<string, Set<string>>()
  const keysByQueue = new Map<string, readonly string[]>()
  const slotKeysByQueue = new Map<string, ReadonlySet<string>>()
  const wakeAll = (queues: Iterable<string>) => {
    for (const queueKey of [...queues]) wake(queueKey)
  }
  let listening = false
  const waits = {
    /** A queue waits on its windows' keys. */
    add(queueKey: string, windows: readonly Window[]): void {
      if (!listening) {
        listening = true
        store.onUnitsBack?.(waits.given)
      }
      if (keysByQueue.has(queueKey)) return
      const keys = windows.map((w) => w.key)
      keysByQueue.set(queueKey, keys)
      const slotKeys = windows.filter((w) => w.policy.concurrency !== undefined).map((w) => w.key)
      if (slotKeys.length > 0) slotKeysByQueue.set(queueKey, new Set(slotKeys))
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
      slotKeysByQueue.delete(queueKey)
      for (const key of keys) {
        const queues = queuesByKey.get(key)
        queues?.delete(queueKey)
        if (queues?.size === 0) queuesByKey.delete(key)
      }
    },
    /** Slots were freed on `keys`: wakes the queues that wait on them as slot keys; undefined: on any key. */
    freed(keys: readonly string[] | undefined): void {
      if (keys === undefined) {
        wakeAll(slotKeysByQueue.keys())
        return
      }
      for (const key of keys) {
        wakeAll([...(queuesByKey.get(key) ?? [])].filter((q) => slotKeysByQueue.get(q)?.has(key)))
      }
    },
    /**
     * Units were given back on `keys` (a settle below the admitted cost): wakes every queue that waits on one;
     * undefined: every queue.
     */
    given(keys: readonly string[] | undefined): void {
      if (keys === undefined) {
        wakeAll(keysByQueue.keys())
        return
      }
      const queues = new Set<string>()
      for (const key of keys) for (const queueKey of queuesByKey.get(key) ?? []) queues.add(queueKey)
      wakeAll(queues)
    },
  }
  if (slots) {
    store.onSlotFree?.(waits.freed)
    // A reset frees every slot of its key.
    store.onKeyChange?.(waits.freed)
  }
  return waits
}
