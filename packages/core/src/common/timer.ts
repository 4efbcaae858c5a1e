/** The longest delay one Node timer keeps: a longer one fires after 1 ms, with a TimeoutOverflowWarning. */
export const MAX_TIMER_MS = 2_147_483_647

/** A timer of any length; `cancel` stops it (a no-op once it fired). */
export interface Timer {
  cancel(): void
}

/**
 * Calls `callback` after `ms` (Infinity: never), however long: a wait beyond MAX_TIMER_MS is slept in chunks of
 * at most that, so it never overflows into a 1 ms timer. `unref` lets the process exit while it waits.
 */
export function startTimer(callback: () => void, ms: number, options?: { readonly unref?: boolean }): Timer {
  let left = Math.max(0, ms)
  let handle: ReturnType<typeof setTimeout> | undefined
  const arm = () => {
    if (left === Number.POSITIVE_INFINITY) return
    const step = Math.min(left, MAX_TIMER_MS)
    left -= step
    handle = setTimeout(left > 0 ? arm : callback, step)
    if (options?.unref) handle.unref?.()
  }
  arm()
  return {
    cancel: () => clearTimeout(handle),
  }
}

/**
 * A callback given to the global setTimeout or setImmediate of the moment. A scheduler that is no longer the
 * global one (fake timers installed while it was armed, then restored; or the reverse) may never call it:
 * `stale` says so, and its owner schedules again rather than wait for it.
 */
export interface Scheduled {
  readonly stale: boolean
  cancel(): void
}

/**
 * `callback` after `ms` on the global setTimeout of now (see Scheduled). It does not keep the process alive: what
 * it waits on (a call in flight on a socket, say) does that.
 */
export function scheduleTimeout<A>(callback: (arg: A) => void, ms: number, arg: A): Scheduled {
  const set = setTimeout
  const clear = clearTimeout
  const handle = set(callback, ms, arg)
  handle.unref?.()
  return {
    get stale() {
      return set !== setTimeout
    },
    cancel: () => clear(handle),
  }
}

/** `callback` once the turn's callbacks have run, on the global setImmediate of now (see Scheduled). */
export function scheduleImmediate(callback: () => void): Scheduled {
  const set = setImmediate
  const clear = clearImmediate
  const handle = set(callback)
  return {
    get stale() {
      return set !== setImmediate
    },
    cancel: () => clear(handle),
  }
}

// The global `performance` is a lazy getter in Node: read once, so a clock read costs only the call.
const perf = performance

/** The monotonic clock (performance.now() time): what deadlines, cached answers and leases are timed by. */
export const monotonicNow = (): number => perf.now()
