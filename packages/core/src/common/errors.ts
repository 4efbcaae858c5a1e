/** The stable codes of every error fleetlimit throws. */
export type FleetlimitErrorCode =
  | 'ERR_FLEETLIMIT_OPTION'
  | 'ERR_FLEETLIMIT_TIMEOUT'
  | 'ERR_FLEETLIMIT_STORE'
  | 'ERR_FLEETLIMIT_QUEUE_FULL'

// A registered symbol, so the brand survives an ESM and a CJS copy of this package
// loaded side by side, where `instanceof` does not.
const BRAND = Symbol.for('fleetlimit.error')

export class FleetlimitError extends Error {
  readonly code: FleetlimitErrorCode
  readonly [BRAND] = true

  constructor(code: FleetlimitErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = new.target.name
    this.code = code
  }
}

/** An option or argument is invalid: thrown at construction, or by a call given a bad argument. */
export class OptionError extends FleetlimitError {
  readonly option: string
  readonly value: unknown

  /**
   * `expected` says what is accepted; for an unknown option name (`unknown` true), what to use instead; for a
   * function of fleetlimit's used as what it makes (`'misuse'`: `app.use(rateLimit)`), the whole message.
   */
  constructor(option: string, value: unknown, expected: string, unknown: boolean | 'misuse' = false) {
    super(
      'ERR_FLEETLIMIT_OPTION',
      unknown === 'misuse'
        ? `fleetlimit: ${expected}.`
        : unknown
          ? `fleetlimit: unknown option \`${option}\` (got ${describe(value)}): ${expected}.`
          : `fleetlimit: invalid option \`${option}\`: got ${describe(value)}; expected ${expected}.`,
    )
    this.option = option
    this.value = value
  }
}

/** `acquire` could not be admitted within its `maxWaitMs`. */
export class RateLimitTimeoutError extends FleetlimitError {
  /** The wait, from the moment of rejection, before this cost could be admitted (a lower bound when others queue ahead). */
  readonly retryAfterMs: number

  constructor(retryAfterMs: number, maxWaitMs: number) {
    super(
      'ERR_FLEETLIMIT_TIMEOUT',
      `fleetlimit: not admitted within maxWaitMs (${maxWaitMs} ms); the limit allows a retry in ${retryAfterMs} ms.`,
    )
    this.retryAfterMs = retryAfterMs
  }
}

/** `acquire` found its key's queue full: `maxQueue` waiters already wait on that key in this process. */
export class QueueFullError extends FleetlimitError {
  /** Waiters queued on the key when this call arrived. */
  readonly queueLength: number
  readonly maxQueue: number

  constructor(queueLength: number, maxQueue: number) {
    super(
      'ERR_FLEETLIMIT_QUEUE_FULL',
      `fleetlimit: acquire() queue of this key is full: ${queueLength} waiters, the limiter's maxQueue option is ${maxQueue}; raise maxQueue, or shed load (answer 429/503 now, or use consume(), which never waits).`,
    )
    this.queueLength = queueLength
    this.maxQueue = maxQueue
  }
}

/** The store failed or missed its deadline, and the policy fails closed. */
export class StoreError extends FleetlimitError {
  /** A hint for clients: when the store may answer again (the breaker's next probe), in ms. */
  readonly retryAfterMs: number

  constructor(message: string, options: { cause?: unknown; retryAfterMs?: number } = {}) {
    super('ERR_FLEETLIMIT_STORE', `fleetlimit: ${message}`, { cause: options.cause })
    this.retryAfterMs = options.retryAfterMs ?? 1_000
  }
}

/** True for any error thrown by fleetlimit (optionally with the given code), whichever copy of the package threw it. */
export function isFleetlimitError(error: unknown, code?: FleetlimitErrorCode): error is FleetlimitError {
  if (typeof error !== 'object' || error === null || (error as Record<symbol, unknown>)[BRAND] !== true) return false
  return code === undefined || (error as FleetlimitError).code === code
}

/** A short, safe rendering of a value for an error message. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value)
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value)
  if (value === null || value === undefined) return String(value)
  if (typeof value === 'function') return 'a function'
  if (Array.isArray(value)) return 'an array'
  return 'an object'
}
