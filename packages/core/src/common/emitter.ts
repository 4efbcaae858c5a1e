type Listener = (...args: never[]) => void

/** A minimal typed event emitter: `on` returns its own unsubscribe function; a throwing listener is isolated. */
export interface Emitter<Events extends Record<string, unknown[]>> {
  on<E extends keyof Events>(event: E, listener: (...args: Events[E]) => void): () => void
  emit<E extends keyof Events>(event: E, ...args: Events[E]): void
  /** Whether anyone listens: lets an emitter skip work (a clock read) that only a listener needs. */
  has(event: keyof Events): boolean
}

/**
 * `onFirstListener` runs when an event gets a listener and had none, `onLastListener` when its last one goes:
 * together they let an emitter hold a subscription of its own only while someone listens.
 */
export function createEmitter<Events extends Record<string, unknown[]>>(
  onFirstListener?: (event: keyof Events) => void,
  onLastListener?: (event: keyof Events) => void,
): Emitter<Events> {
  const listeners = new Map<keyof Events, Set<Listener>>()
  return {
    on(event, listener) {
      let set = listeners.get(event)
      if (!set) {
        set = new Set()
        listeners.set(event, set)
        onFirstListener?.(event)
      }
      const entry = listener as unknown as Listener
      const own = set
      own.add(entry)
      return () => {
        if (!own.delete(entry) || own.size > 0 || listeners.get(event) !== own) return
        listeners.delete(event)
        onLastListener?.(event)
      }
    },
    has: (event) => listeners.size > 0 && (listeners.get(event)?.size ?? 0) > 0,
    emit(event, ...args) {
      const set = listeners.size === 0 ? undefined : listeners.get(event)
      // Every decision emits: with no listener, that costs a map lookup and nothing else.
      if (set === undefined || set.size === 0) return
      for (const listener of set) {
        try {
          ;(listener as unknown as (...a: Events[typeof event]) => void)(...args)
        } catch (error) {
          // A listener's bug must not turn a rate-limit decision into a failed request: it surfaces on its own.
          queueMicrotask(() => {
            throw error
          })
        }
      }
    },
  }
}
