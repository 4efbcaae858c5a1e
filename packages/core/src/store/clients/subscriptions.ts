import { createWeakSignal, type WeakSignal } from '../../common/weak-signal.js'
import type { ClientAdapter, Listener } from './client-adapter.js'

/** Calls `missed` on every 'ready' after the first: a connection lost and made again. */
export function onReadyAgain(emitter: { on(event: string, listener: Listener): unknown }, missed: () => void): void {
  let readyBefore = false
  emitter.on('ready', () => {
    if (readyBefore) missed()
    readyBefore = true
  })
}

/** One subscriber connection, as each library makes it. */
export interface Subscriber {
  listen(deliver: (channel: string, message: string) => void, missed: () => void): void
  /** Subscribes; resolves once the server confirmed it. */
  add(channel: string): Promise<void>
}

/** The subscribe() of an adapter: one connection, made on the first call; listeners per channel, held weakly. */
export function createSubscriptions(open: () => Subscriber | undefined): ClientAdapter['subscribe'] {
  const channels = new Map<string, { signal: WeakSignal<[string | undefined]>; subscribed: Promise<void> }>()
  let subscriber: Subscriber | undefined | null = null
  return (channel, listener) => {
    let entry = channels.get(channel)
    if (!entry) {
      const signal = createWeakSignal<[string | undefined]>()
      if (subscriber === null) {
        subscriber = open()
        subscriber?.listen(
          (from, message) => channels.get(from)?.signal.emit(message),
          () => {
            for (const each of channels.values()) each.signal.emit(undefined)
          },
        )
      }
      const subscribed = subscriber ? subscriber.add(channel) : Promise.reject(new Error('no subscriber'))
      subscribed.catch(() => {})
      entry = { signal, subscribed }
      channels.set(channel, entry)
    }
    entry.signal.add(listener)
    return entry.subscribed
  }
}
