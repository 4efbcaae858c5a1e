/**
 * Estimates one server's clock from the times its replies carry, to turn a local deadline into the server's
 * time, erring early. A reply stamped `serverMs`, to a call sent at local `sentAt` and read at `receivedAt`, was
 * made between the two, so `serverMs - receivedAt` is a lower bound of the offset between the clocks, short of it
 * by at most `receivedAt - sentAt`; the estimate is the highest bound seen in the last 10 to 20 s, so it stays
 * tight, and follows a server clock that stepped back. A reply read more than PRECISE_MS after its call was sent
 * (by an event loop busy with a burst, say) is not learned from: until one is read in time, the store sends no
 * deadline, rather than deadlines that err early by that delay and refuse calls whose callers still wait.
 */
export interface ServerClock {
  /** Learns from a reply stamped `serverMs` (the server's clock) to a call sent at `sentAt`, read at `receivedAt` (local ms). */
  observe(serverMs: number, sentAt: number, receivedAt: number): void
  /** The server time (ms) no later than local time `at`, or undefined before the first reply. */
  serverTimeAt(at: number): number | undefined
}

const SPAN_MS = 10_000
// The most a deadline errs early by: a fifth of the default timeoutMs (100 ms), and far above a healthy round trip.
const PRECISE_MS = 20

export function createServerClock(): ServerClock {
  let current = Number.NEGATIVE_INFINITY
  let previous = Number.NEGATIVE_INFINITY
  let spanStart = Number.NEGATIVE_INFINITY
  return {
    observe(serverMs, sentAt, receivedAt) {
      if (receivedAt - sentAt > PRECISE_MS) return
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
