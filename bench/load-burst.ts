import type { RateLimiter } from '@fleetlimit/core'

/** What `calls` concurrent consume() calls on one key got. */
export interface BurstResult {
  readonly calls: number
  readonly store: number
  readonly errors: number
  readonly admitted: number
  readonly breakerOpenings: number
  readonly slowestMs: number
  readonly elapsedMs: number
}

/** Fires `calls` consume() calls at once; `during` runs right after they were issued (say, a blocked loop). */
export async function burst(
  limiter: RateLimiter,
  tenant: string,
  calls: number,
  during: () => void = () => {},
): Promise<BurstResult> {
  const openings = limiter.stats().breakerOpenings
  const started = performance.now()
  let slowestMs = 0
  let store = 0
  let errors = 0
  let admitted = 0
  const all = Array.from({ length: calls }, () =>
    limiter.consume(tenant).then(
      (d) => {
        if (d.source === 'store') store++
        if (d.allowed) admitted++
        slowestMs = Math.max(slowestMs, performance.now() - started)
      },
      () => {
        errors++
        slowestMs = Math.max(slowestMs, performance.now() - started)
      },
    ),
  )
  during()
  await Promise.all(all)
  return {
    calls,
    store,
    errors,
    admitted,
    breakerOpenings: limiter.stats().breakerOpenings - openings,
    slowestMs,
    elapsedMs: performance.now() - started,
  }
}
