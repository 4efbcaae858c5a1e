import type { Store } from '@fleetlimit/core'
import { guardStore, serversOf } from '../../../packages/core/src/store/server-set.js'
import { STORE } from '../../../packages/core/src/store/store.js'

/**
 * Wraps a store to note the store-clock time (ms) of every unit it admits: plain admissions, and the units a
 * lease call admits for the call that asked (the rest of a lease is admitted locally, and noted by the caller).
 */
export function recordingStore(store: Store): { store: Store; admissions: number[] } {
  const admissions: number[] = []
  const note = (time: number, units: number) => {
    for (let i = 0; i < units; i++) admissions.push(time)
  }
  const wrapped: Store = {
    [STORE]: true,
    async consume(requests, deadline) {
      const results = await store.consume(requests, deadline)
      const [first] = results
      if (first && results.every((r) => r.allowed)) note(first.now, requests[0]?.cost ?? 0)
      return results
    },
    peek: (requests) => store.peek(requests),
    hold: (requests, ms) => store.hold(requests, ms),
    reset: (key) => store.reset(key),
    ...(store.lease && {
      lease: async (request, deadline) => {
        const result = await (store.lease as NonNullable<Store['lease']>)(request, deadline)
        if (result.lease.granted > 0) note(result.now, request.min)
        return result
      },
    }),
    ...(store.release && { release: store.release.bind(store) }),
    ...(store.refund && { refund: store.refund.bind(store) }),
    ...(store.isConnected && { isConnected: store.isConnected.bind(store) }),
    ...(store.lastError && { lastError: store.lastError.bind(store) }),
  }
  const servers = serversOf(store)
  return { admissions, store: servers ? guardStore(wrapped, servers) : wrapped }
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
