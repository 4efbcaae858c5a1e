/**
 * Estimates one server's clock from the times its replies carry, to turn a local deadline into the server's
 * time. A reply stamped `serverMs`, to a call sent at local `sentAt` and read at `receivedAt`, was made between the
 * two, so the offset between the clocks is at least `serverMs - receivedAt` and at most `serverMs - sentAt`. The
 * estimate is the highest lower bound seen in the last 10 to 20 s, so it stays tight, errs early, and follows a
 * server clock that stepped back; only replies read within PRECISE_MS of their call's sending teach it, since a
 * bound from a reply read later (by an event loop busy with a burst, say) would err early by that delay and
 * refuse calls whose callers still wait. Until such a reply comes, the estimate is the lowest upper bound seen,
 * which errs late by at most the round trip it came from: a call then records nothing once that much past its
 * deadline, where with no deadline it would record whenever it ran.
 */
export interface ServerClock {
  /** Learns from a reply stamped `serverMs` (the server's clock) to a call sent at `sentAt`, read at `receivedAt` (local ms). */
  observe(serverMs: number, sentAt: number, receivedAt: number): void
  /** The server time (ms) at local time `at`, or undefined before the first reply. */
  serverTimeAt(at: number): number | undefined
}

const SPAN_MS = 10_000
// The most a deadline errs early by: a fifth of the default timeoutMs (100 ms), and far above a healthy round trip.
const PRECISE_MS = 20

/** The bounds of the offset (server minus local ms) that one span's replies gave. */
interface Bounds {
  low: number
  high: number
}

const none = (): Bounds => ({ low: Number.NEGATIVE_INFINITY, high: Number.POSITIVE_INFINITY })

export function createServerClock(): ServerClock {
  let current = none()
  let previous = none()
  let spanStart = Number.NEGATIVE_INFINITY
  return {
    observe(serverMs, sentAt, receivedAt) {
      if (receivedAt - spanStart >= SPAN_MS) {
        previous = receivedAt - spanStart >= 2 * SPAN_MS ? none() : current
        current = none()
        spanStart = receivedAt
      }
      current.high = Math.min(current.high, serverMs - sentAt)
      if (receivedAt - sentAt <= PRECISE_MS) current.low = Math.max(current.low, serverMs - receivedAt)
    },
    serverTimeAt(at) {
      const low = Math.max(current.low, previous.low)
      if (low !== Number.NEGATIVE_INFINITY) return at + low
      const high = Math.min(current.high, previous.high)
      return high === Number.POSITIVE_INFINITY ? undefined : at + high
    },
  }
}
