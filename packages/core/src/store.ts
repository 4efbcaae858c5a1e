/** The brand (and interface version) of a fleetlimit store. */
export const STORE = Symbol.for('fleetlimit.store.v1')

/** One sliding-window question about one key. */
export interface WindowRequest {
  /** The key without the store's prefix. */
  readonly key: string
  readonly limit: number
  readonly windowMs: number
  readonly cost: number
}

/** A store's answer, in the script's terms. */
export interface WindowResult {
  readonly allowed: boolean
  readonly remaining: number
  readonly retryAfterMs: number
  readonly resetMs: number
  /** The store clock's time of the decision, in ms (the server's clock for Redis). */
  readonly now: number
}

/** Where windows live: `redisStore(client)` for a fleet, `memoryStore()` for one process. */
export interface Store {
  readonly [STORE]: true
  /** Admits `cost` units when they fit and records them; a denial records nothing. */
  consume(request: WindowRequest): Promise<WindowResult>
  /** Decides for `cost` units and records nothing; `remaining` is what the window holds now. */
  peek(request: WindowRequest): Promise<WindowResult>
  /** Forgets every unit of a key. */
  reset(key: string): Promise<void>
}

export function isStore(value: unknown): value is Store {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[STORE] === true
}
