/**
 * Bounds the calls in flight to one server: a call beyond the bound waits, first-in first-out, for one to
 * settle. A burst from this process then queues here, where waiting costs no deadline, instead of in the
 * client's socket, where every queued call's deadline runs while the server works through the calls ahead.
 */
export interface CallGate {
  /** Calls sent and not yet settled. */
  readonly inFlight: number
  /** Calls waiting for a slot. */
  readonly waiting: number
  /** Undefined when a slot is free (taken now); else a promise that resolves once one is handed over. */
  enter(): Promise<void> | undefined
  /** Frees the slot taken by enter(), handing it to the longest waiter. */
  leave(): void
}

export function createCallGate(maxInFlight: number): CallGate {
  let inFlight = 0
  // A queue as an array and a head index: shift() on a long array is linear, this is constant time.
  let waiters: (() => void)[] = []
  let head = 0
  return {
    get inFlight() {
      return inFlight
    },
    get waiting() {
      return waiters.length - head
    },
    enter() {
      if (inFlight < maxInFlight && head === waiters.length) {
        inFlight++
        return undefined
      }
      return new Promise<void>((resolve) => waiters.push(resolve))
    },
    leave() {
      if (head < waiters.length) {
        // The slot passes straight to the next waiter: inFlight stays as it is.
        const next = waiters[head] as () => void
        waiters[head++] = noop
        if (head === waiters.length) {
          waiters = []
          head = 0
        } else if (head > 1_024 && head * 2 > waiters.length) {
          waiters = waiters.slice(head)
          head = 0
        }
        next()
        return
      }
      inFlight--
    },
  }
}

const noop = () => {}
