import fc from 'fast-check'
/**
 * The reference model of a sliding-window log, by the definition: a window of length W at time t holds every
 * unit recorded in (t - W, t]. Units are recorded at max(now, the newest recorded time), a lease's at
 * max(now + ttl, newest), as lua/sliding-log.lua and the memory store record them. Times in µs.
 */
export class ReferenceLog {
  private readonly admissions: { at: number; units: number }[] = []

  constructor(readonly windowUs: number) {}

  private live(nowUs: number) {
    return this.admissions.filter((a) => a.at > nowUs - this.windowUs)
  }

  used(nowUs: number): number {
    return this.live(nowUs).reduce((sum, a) => sum + a.units, 0)
  }

  private msUntilGone(atUs: number, nowUs: number) {
    return Math.ceil((atUs + this.windowUs - nowUs) / 1000)
  }

  /** The answer for `cost` units, recording nothing: { allowed, remaining, retryAfterMs, resetMs }. */
  answer(nowUs: number, limit: number, cost: number) {
    const live = this.live(nowUs)
    const used = live.reduce((sum, a) => sum + a.units, 0)
    // A released entry still bounds the reset, unless the window holds no unit at all.
    const newest = used > 0 ? live.at(-1) : undefined
    const resetMs = newest ? this.msUntilGone(newest.at, nowUs) : 0
    if (used + cost <= limit) return { allowed: true, remaining: limit - used, retryAfterMs: 0, resetMs }
    // The (used + cost - limit)-th oldest unit must leave first.
    let toFree = used + cost - limit
    let blocking = live[0] as { at: number }
    for (const admission of live) {
      blocking = admission
      toFree -= admission.units
      if (toFree <= 0) break
    }
    return {
      allowed: false,
      remaining: Math.max(0, limit - used),
      retryAfterMs: this.msUntilGone(blocking.at, nowUs),
      resetMs,
    }
  }

  /** Records `units` at `atUs` or the newest time, whichever is later; returns the time used. */
  record(atUs: number, units: number): number {
    const newest = this.admissions.at(-1)?.at ?? Number.NEGATIVE_INFINITY
    const at = Math.max(atUs, newest)
    this.admissions.push({ at, units })
    return at
  }

  /** The answer after recording: remaining less the cost, and the reset of the newest unit. */
  resetMs(nowUs: number): number {
    const newest = this.live(nowUs).at(-1)
    return newest ? this.msUntilGone(newest.at, nowUs) : 0
  }

  /** Removes up to `units` units recorded at exactly `atUs`, if they are still in the window; returns how many. */
  release(nowUs: number, atUs: number, units: number): number {
    if (atUs <= nowUs - this.windowUs) return 0
    let removed = 0
    for (const admission of this.admissions) {
      if (admission.at !== atUs) continue
      const take = Math.min(units - removed, admission.units)
      admission.units -= take
      removed += take
    }
    return removed
  }
}

/** One window of a call, as a store answers it. */
export interface ModelWindow {
  allowed: boolean
  remaining: number
  retryAfterMs: number
  resetMs: number
}

/** What the model test drives: a store (or the script) whose clock the test sets, in µs. */
export interface ModelSubject {
  setNow(nowUs: number): void
  /** Consumes (or peeks) `cost` in every window at once. */
  decide(
    windows: readonly { key: string; limit: number; windowMs: number }[],
    cost: number,
    peek: boolean,
  ): Promise<ModelWindow[]>
  lease(
    key: string,
    limit: number,
    windowMs: number,
    want: number,
    ttlMs: number,
  ): Promise<{ granted: number; scoreUs: number; window: ModelWindow }>
  /** Removes units recorded at `atUs`; the count removed when the store says it. */
  release(key: string, windowMs: number, atUs: number, units: number): Promise<number | undefined>
}

export interface ModelStep {
  readonly op: 'consume' | 'peek' | 'lease' | 'release'
  /** No time at all (a call in the same microsecond), an advance, or to 1 µs before, at or after an exit. */
  readonly time: 'same' | 'advance' | 'boundary'
  readonly advance: number
  readonly boundaryUs: number
  readonly cost: number
  /** Both windows (a multi-policy call) or the first alone. */
  readonly both: boolean
  readonly ttl: number
  readonly pick: number
}

/**
 * Runs `steps` on a fresh pair of windows of `subject` and on the model, comparing every reply field; returns
 * how many decisions were compared. `stepUs` is the clock's resolution (1 µs for the script, 1 ms for the memory
 * store, whose times are ms).
 */
export async function compareWithModel(
  subject: ModelSubject,
  keys: readonly [string, string],
  limits: readonly [number, number],
  windowsMs: readonly [number, number],
  steps: readonly ModelStep[],
  stepUs: number,
  check: (actual: unknown, expected: unknown, what: string) => void,
): Promise<number> {
  const models = [new ReferenceLog(windowsMs[0] * 1000), new ReferenceLog(windowsMs[1] * 1000)] as const
  const recorded: { at: number; units: number }[] = []
  let nowUs = 1_700_000_000_000_000
  let compared = 0
  for (const [i, step] of steps.entries()) {
    if (step.time === 'advance')
      nowUs += Math.max(stepUs, Math.floor((step.advance * windowsMs[0]) / 1000 / stepUs) * stepUs)
    if (step.time === 'boundary') {
      // To the moment the oldest live unit of the first window leaves it, give or take the clock's resolution.
      const exit = recorded.map((r) => r.at + windowsMs[0] * 1000).find((t) => t > nowUs)
      if (exit !== undefined) nowUs = Math.max(nowUs, exit + step.boundaryUs * stepUs)
    }
    subject.setNow(nowUs)
    const what = `step ${i} (${step.op})`
    if (step.op === 'release') {
      const target = recorded[step.pick % Math.max(1, recorded.length)]
      if (!target) continue
      const units = 1 + (step.cost % (target.units + 1))
      const expected = models[0].release(nowUs, target.at, units)
      const removed = await subject.release(keys[0], windowsMs[0], target.at, units)
      if (removed !== undefined) check(removed, expected, what)
      compared++
      continue
    }
    if (step.op === 'lease') {
      const [limit] = limits
      const model = models[0]
      const used = model.used(nowUs)
      // Up to a tenth of the window; one lease in eight lasts twice the window.
      const ttlMs = step.ttl % 8 === 0 ? 2 * windowsMs[0] : 1 + (step.ttl % Math.max(1, Math.floor(windowsMs[0] / 10)))
      const actual = await subject.lease(keys[0], limit, windowsMs[0], step.cost, ttlMs)
      const available = limit - used
      if (available >= 1) {
        const granted = Math.min(step.cost, available)
        const at = model.record(nowUs + ttlMs * 1000, granted)
        recorded.push({ at, units: granted })
        check(
          actual,
          {
            granted,
            scoreUs: at,
            window: { allowed: true, remaining: available - granted, retryAfterMs: 0, resetMs: model.resetMs(nowUs) },
          },
          what,
        )
      } else {
        check(actual, { granted: 0, scoreUs: 0, window: model.answer(nowUs, limit, 1) }, what)
      }
      compared++
      continue
    }
    const count = step.both ? 2 : 1
    const peek = step.op === 'peek'
    const cost = Math.min(step.cost, ...limits.slice(0, count))
    const expected = models.slice(0, count).map((m, w) => m.answer(nowUs, limits[w] as number, cost))
    const fits = expected.every((e) => e.allowed)
    if (fits && !peek) {
      for (const [w, m] of models.slice(0, count).entries()) {
        const at = m.record(nowUs, cost)
        const e = expected[w] as ModelWindow
        e.remaining -= cost
        e.resetMs = m.resetMs(nowUs)
        if (w === 0) recorded.push({ at, units: cost })
      }
    }
    const windows = keys
      .slice(0, count)
      .map((key, w) => ({ key, limit: limits[w] as number, windowMs: windowsMs[w] as number }))
    check(await subject.decide(windows, cost, peek), expected, what)
    compared++
  }
  return compared
}

/** Random schedules of up to `maxLength` steps; costs reach 1 000 (clamped to the limits). */
export function modelSteps(maxLength: number) {
  const step = fc.record({
    op: fc.constantFrom('consume', 'consume', 'consume', 'peek', 'lease', 'release'),
    time: fc.constantFrom('same', 'advance', 'advance', 'boundary'),
    // Up to a window and a half, scaled to the window, so that units both stay and leave.
    advance: fc.integer({ min: 1, max: 1_500_000 }),
    boundaryUs: fc.integer({ min: -1, max: 1 }),
    cost: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: 1_000 })),
    both: fc.boolean(),
    ttl: fc.nat(),
    pick: fc.nat(),
  }) as fc.Arbitrary<ModelStep>
  return fc.array(step, { minLength: 1, maxLength, size: 'max' })
}

/** Two limits (or two windows in ms) of the two windows a schedule runs on: 1 to 1 000 each. */
export const modelPair = () => fc.tuple(fc.integer({ min: 1, max: 1_000 }), fc.integer({ min: 1, max: 1_000 }))

/**
 * Two windows in ms: mostly 1 to 1 000, sometimes about 38 hours, on either side of 2^37 µs, where
 * lua/sliding-log.lua's entries go from 9 to 10 bytes (schedules scale their steps to the window, so such a log's
 * base also grows old enough to be moved).
 */
export const modelWindows = () =>
  fc.oneof(
    { weight: 3, arbitrary: modelPair() },
    {
      weight: 1,
      arbitrary: fc.tuple(fc.constantFrom(137_438_953, 137_438_954), fc.constantFrom(137_438_953, 137_438_954)),
    },
  )
