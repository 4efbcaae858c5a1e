import type { Store } from '../store/store.js'
import type { RateLimiter } from './limiter-types.js'

/**
 * The store each limiter decides on, for what must know whether two limiters share their windows (the HTTP layer
 * counts a request once per store key). Weak: it keeps no limiter alive.
 */
const stores = new WeakMap<RateLimiter, Store>()

/** Records `limiter`'s store, and returns the limiter. */
export function withStore(store: Store, limiter: RateLimiter): RateLimiter {
  stores.set(limiter, store)
  return limiter
}

/** The store a limiter made by createRateLimiter decides on; undefined for any other object. */
export function storeOf(limiter: RateLimiter): Store | undefined {
  return stores.get(limiter)
}
