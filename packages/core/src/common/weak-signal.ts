/**
 * Listeners held weakly, for a long-lived source (a client, a store) that must not keep its short-lived
 * listeners (stores, limiters) alive: a listener is dropped once it is collected. Its owner keeps it alive.
 */
export interface WeakSignal<A extends unknown[]> {
  add(listener: (...args: A) => void): void
  emit(...args: A): void
  /** Whether any listener was added (collected ones included). */
  readonly used: boolean
}

export function createWeakSignal<A extends unknown[]>(): WeakSignal<A> {
  const listeners = new Set<WeakRef<(...args: A) => void>>()
  let used = false
  return {
    add(listener) {
      used = true
      listeners.add(new WeakRef(listener))
    },
    emit(...args) {
      for (const ref of listeners) {
        const listener = ref.deref()
        if (listener) listener(...args)
        else listeners.delete(ref)
      }
    },
    get used() {
      return used
    },
  }
}
