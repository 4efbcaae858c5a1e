/** Runs `onAbort` when `signal` aborts; returns the function that stops watching. */
export type AbortWatch = (signal: AbortSignal, onAbort: () => void) => () => void

/**
 * Watches signals with one 'abort' listener per signal, however many callers share it: thousands of waiters on
 * one signal would each add a listener (a linear scan per add, and a MaxListenersExceededWarning past 10).
 * The listener goes when its last caller stops watching.
 */
export function createAbortWatch(): AbortWatch {
  const watched = new WeakMap<AbortSignal, { readonly reactions: Set<() => void>; readonly listener: () => void }>()
  return (signal, onAbort) => {
    let entry = watched.get(signal)
    if (!entry) {
      const reactions = new Set<() => void>()
      const listener = () => {
        watched.delete(signal)
        for (const reaction of [...reactions]) reaction()
      }
      entry = { reactions, listener }
      watched.set(signal, entry)
      signal.addEventListener('abort', listener, { once: true })
    }
    const { reactions, listener } = entry
    reactions.add(onAbort)
    return () => {
      if (!reactions.delete(onAbort) || reactions.size > 0 || watched.get(signal) !== entry) return
      watched.delete(signal)
      signal.removeEventListener('abort', listener)
    }
  }
}
