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
