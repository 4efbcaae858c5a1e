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
    announceUnitsBack: (keys: readonly string[]) => void unitsBack.announce(keys).catch(() => {}),
    onKeyChange: (listener: KeysListener) => changes.listen(listener, false),
    onSlotFree: (listener: KeysListener) => slotFrees.listen(listener, true),
    onUnitsBack: (listener: KeysListener) => unitsBack.listen(listener, true),
  }
}
