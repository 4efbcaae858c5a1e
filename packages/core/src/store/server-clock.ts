/**
 * Estimates one server's clock from the times its replies carry, to turn a local deadline into the server's
 * time, erring early. A reply stamped `serverMs` and received at local `receivedAt` was made no later than its
 * receipt, so `serverMs - receivedAt` is a lower bound of the offset between the clocks; the estimate is the
 * highest bound seen in the last 10 to 20 s, so it stays tight, and follows a server clock that stepped back.
 */
export interface ServerClock {
  /** Learns from a reply stamped `serverMs` (the server's clock) and received at `receivedAt` (local ms). */
  observe(serverMs: number, receivedAt: number): void
  /** The server time (ms) no later than local time `at`, or undefined before the first reply. */
  serverTimeAt(at: number): number | undefined
}

const SPAN_MS = 10_000

export function createServerClock(): ServerClock {
  let current = Number.NEGATIVE_INFINITY
  let previous = Number.NEGATIVE_INFINITY
  let spanStart = Number.NEGATIVE_INFINITY
  return {
    observe(serverMs, receivedAt) {
      if (receivedAt - spanStart >= SPAN_MS) {
        previous = receivedAt - spanStart >= 2 * SPAN_MS ? Number.NEGATIVE_INFINITY : current
        current = Number.NEGATIVE_INFINITY
        spanStart = receivedAt
      }
      current = Math.max(current, serverMs - receivedAt)
    },
    serverTimeAt(at) {
      const offset = Math.max(current, previous)
      return offset === Number.NEGATIVE_INFINITY ? undefined : at + offset
    },
  }
}
