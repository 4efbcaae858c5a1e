import { randomBytes } from 'node:crypto'
import { createRateLimiter, type Store } from '@fleetlimit/core'
import { maxInWindow, recordingStore } from '@fleetlimit/test-kit/recording-store'

export interface BurstReport {
  /** Admission times relative to the first, in ms of the store's clock, in order. */
  readonly admittedAt: number[]
  /** Admissions grouped where the gap between two exceeds half a window. */
  readonly groups: number[][]
  readonly maxInWindow: number
}

/** Fires `calls` concurrent acquire() calls at one key and reports when the store admitted each. */
export async function acquireBurst(store: Store, { calls = 12, limit = 5, windowMs = 500 } = {}): Promise<BurstReport> {
  const recording = recordingStore(store)
  const limiter = createRateLimiter({ store: recording.store, limit, window: `${windowMs}ms`, name: 'demo' })
  const key = `burst-${randomBytes(4).toString('hex')}`
  await Promise.all(Array.from({ length: calls }, () => limiter.acquire(key)))

  const sorted = [...recording.admissions].sort((a, b) => a - b)
  const first = sorted[0] ?? 0
  const admittedAt = sorted.map((t) => t - first)
  const groups: number[][] = []
  for (const at of admittedAt) {
    const group = groups.at(-1)
    if (group && at - (group.at(-1) as number) <= windowMs / 2) group.push(at)
    else groups.push([at])
  }
  return { admittedAt, groups, maxInWindow: maxInWindow(sorted, windowMs) }
}
