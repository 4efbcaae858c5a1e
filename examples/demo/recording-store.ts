import { STORE, type Store } from '@fleetlimit/core'

/** Wraps a store to note the store-clock time of every admission: the times the window is defined on. */
export function recordingStore(store: Store): { store: Store; admissions: number[] } {
  const admissions: number[] = []
  return {
    admissions,
    store: {
      [STORE]: true,
      async consume(requests) {
        const results = await store.consume(requests)
        const [first] = results
        if (first && results.every((r) => r.allowed)) {
          for (let i = 0; i < (requests[0]?.cost ?? 0); i++) admissions.push(first.now)
        }
        return results
      },
      peek: (requests) => store.peek(requests),
      reset: (key) => store.reset(key),
    },
  }
}

/** The most admissions inside any window (t - windowMs, t]. */
export function maxInWindow(admissions: readonly number[], windowMs: number): number {
  const sorted = [...admissions].sort((a, b) => a - b)
  let most = 0
  let start = 0
  for (let end = 0; end < sorted.length; end++) {
    while ((sorted[start] as number) <= (sorted[end] as number) - windowMs) start++
    most = Math.max(most, end - start + 1)
  }
  return most
}
