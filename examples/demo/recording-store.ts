import { STORE, type Store } from '@fleetlimit/core'

/** Wraps a store to note the store-clock time of every admission: the times the window is defined on. */
export function recordingStore(store: Store): { store: Store; admissions: number[] } {
  const admissions: number[] = []
  return {
    admissions,
    store: {
      [STORE]: true,
      async consume(request) {
        const result = await store.consume(request)
        if (result.allowed) for (let i = 0; i < request.cost; i++) admissions.push(result.now)
        return result
      },
      peek: (request) => store.peek(request),
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
