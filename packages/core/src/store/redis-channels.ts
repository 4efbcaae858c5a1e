// What one process's calls change that the other processes must hear of, through the Redis store's pub/sub
// channels: one subscriber connection per client, made when the first listener is added.
import { createWeakSignal } from '../common/weak-signal.js'
import type { ClientAdapter } from './clients/client-adapter.js'
import { EVERY_KEY } from './store.js'

type KeysListener = (keys: readonly string[] | undefined) => void

/**
 * A channel whose listeners hear keys without the prefix, or `undefined` when messages may have been missed (its
 * subscription was just confirmed, or its subscriber connection came back): those who wait on keys then ask again.
 */
function keysChannel(adapter: ClientAdapter, name: string, keysOf: (message: string) => readonly string[] | undefined) {
  const signal = createWeakSignal<[readonly string[] | undefined]>()
  // Held here, by the store: the adapter holds its listeners weakly.
  const deliver = (message: string | undefined) => signal.emit(message === undefined ? undefined : keysOf(message))
  return {
    listen(listener: KeysListener, missedOnStart: boolean): void {
      if (!signal.used) {
        const subscribed = adapter.subscribe(name, deliver)
        subscribed.then(
          () => {
            if (missedOnStart) signal.emit(undefined)
          },
          () => {},
        )
      }
      signal.add(listener)
    },
    announce: (keys: readonly string[]) => adapter.publish(name, keys.join(' ')),
  }
}

/** The most keys in one message of a batched channel: a burst of settles sends a few messages of bounded size. */
export const KEYS_PER_MESSAGE = 1_000

const RESOLVED = Promise.resolve()

/**
 * `announce` once for the keys of the calls answered together: the first call queues a promise job (which no fake
 * timers hold), and the calls made before it runs add their keys to the same messages, each key once.
 */
function batched(announce: (keys: readonly string[]) => Promise<void>) {
  let pending: Set<string> | undefined
  const flush = () => {
    const keys = [...(pending as Set<string>)]
    pending = undefined
    for (let i = 0; i < keys.length; i += KEYS_PER_MESSAGE) {
      announce(keys.slice(i, i + KEYS_PER_MESSAGE)).catch(() => {})
    }
  }
  return (keys: readonly string[]) => {
    if (pending === undefined) {
      pending = new Set()
      void RESOLVED.then(flush)
    }
    for (const key of keys) pending.add(key)
  }
}

/** The Redis store's channels under `prefix`. */
export function createRedisChannels(adapter: ClientAdapter, prefix: string) {
  // Resets and holds (and notes), so that every process's local tier drops what it cached of the keys (all of them
  // on EVERY_KEY). Published after the change is made: a process that drops its cache on the message then asks the
  // store as changed.
  const changes = keysChannel(adapter, `${prefix}:changed`, (m) => (m === EVERY_KEY ? undefined : m.split(' ')))
  // Slots freed, published by the script that frees them (the keys with the prefix), so that every process's
  // waiters on those keys ask again.
  const slotChannel = `${prefix}:slot-free`
  const keyAt = prefix.length + 1
  const slotFrees = keysChannel(adapter, slotChannel, (m) => m.split(' ').map((key) => key.slice(keyAt)))
  // Settles that gave units back, so that every process's waiters on those keys ask again: the room came back
  // before the units' time.
  const unitsBack = keysChannel(adapter, `${prefix}:units-back`, (m) => m.split(' '))
  return {
    slotChannel,
    announceChange: changes.announce,
    // Not awaited by a settle, which is made: a message lost with the connection leaves other waiters their wait.
    announceUnitsBack: batched(unitsBack.announce),
    onKeyChange: (listener: KeysListener) => changes.listen(listener, false),
    onSlotFree: (listener: KeysListener) => slotFrees.listen(listener, true),
    onUnitsBack: (listener: KeysListener) => unitsBack.listen(listener, true),
  }
}
