import { expect } from 'chai'
import fc from 'fast-check'

/** The check both stores' model tests use: equal, with both sides in the message when not. */
export function exactly(actual: unknown, expected: unknown, what: string): void {
  expect(actual, `${what}: got ${JSON.stringify(actual)}, the model says ${JSON.stringify(expected)}`).to.deep.equal(
    expected,
  )
}

/**
 * The reference model of a call of rate windows with their own costs and an in-flight window, with settles,
 * refunds and frees, by the definitions of issue 32 (store.ts): a rate window of W at t holds every unit recorded
 * in (t - W, t], units recorded at max(now, the newest entry's time), one entry per time; a slot is live while its
 * end is after now. An admission's settle and refund share its id (issue 37): a refund takes back the admission's
 * units and what its settle moved, a settle after its refund changes nothing. Times in µs; a subject's own stamps
 * (µs or ms) are its adapter's to convert.
 */
class RateModel {
  readonly entries: { at: number; units: number }[] = []

  constructor(readonly windowUs: number) {}

  live(nowUs: number) {
    return this.entries.filter((e) => e.at > nowUs - this.windowUs)
  }

  used(nowUs: number): number {
    return this.live(nowUs).reduce((sum, e) => sum + e.units, 0)
  }

  private msUntilGone(atUs: number, nowUs: number) {
    return Math.ceil((atUs + this.windowUs - nowUs) / 1000)
  }

  answer(nowUs: number, limit: number, cost: number): ModelResult {
    const live = this.live(nowUs)
    const used = live.reduce((sum, e) => sum + e.units, 0)
    // An emptied entry still bounds the reset, unless the window holds no unit at all.
    const newest = live.at(-1)
    const resetMs = used > 0 && newest ? this.msUntilGone(newest.at, nowUs) : 0
    if (used + cost <= limit) return { allowed: true, remaining: limit - used, retryAfterMs: 0, resetMs }
    let toFree = used + cost - limit
    let blocking = live[0] as { at: number }
    for (const entry of live) {
      blocking = entry
      toFree -= entry.units
      if (toFree <= 0) break
    }
    const retryAfterMs = this.msUntilGone(blocking.at, nowUs)
    return { allowed: false, remaining: Math.max(0, limit - used), retryAfterMs, resetMs }
  }

  /** Records `units` at now or the newest entry's time; returns the time. */
  record(nowUs: number, units: number): number {
    const newest = this.live(nowUs).at(-1)
    if (newest && newest.at >= nowUs) {
      newest.units += units
      return newest.at
    }
    this.entries.push({ at: nowUs, units })
    return nowUs
  }

  /** The live entry recorded at exactly `atUs`. */
  entry(nowUs: number, atUs: number) {
    return this.live(nowUs).find((e) => e.at === atUs)
  }
}

class SlotModel {
  readonly ends = new Map<number, number>()

  constructor(readonly ttlUs: number) {}

  live(nowUs: number): number[] {
    return [...this.ends].filter(([, end]) => end > nowUs).map(([id]) => id)
  }

  answer(nowUs: number, limit: number): ModelResult {
    const ends = [...this.ends.values()].filter((end) => end > nowUs)
    const resetMs = ends.length > 0 ? Math.ceil((Math.max(...ends) - nowUs) / 1000) : 0
    if (ends.length < limit) return { allowed: true, remaining: limit - ends.length, retryAfterMs: 0, resetMs }
    return { allowed: false, remaining: 0, retryAfterMs: Math.ceil((Math.min(...ends) - nowUs) / 1000), resetMs }
  }

  isLive(id: number, nowUs: number): boolean {
    return (this.ends.get(id) ?? 0) > nowUs
  }
}

/** One window's answer, as compared: `recorded` (µs for a rate window, the slot's id) when the call took it. */
export interface ModelResult {
  allowed: boolean
  remaining: number
  retryAfterMs: number
  resetMs: number
  recorded?: number
}

export interface ModelWindowRequest {
  readonly key: string
  readonly limit: number
  readonly windowMs: number
  readonly cost: number
  readonly slots?: true
  readonly shadow?: true
}

/** What the settle model drives: a store whose clock the test sets, in µs. */
export interface SettleSubject {
  setNow(nowUs: number): void
  /** Consumes (or peeks); each result's `recorded` in µs for a rate window, the slot's id for a slot window. */
  decide(windows: readonly ModelWindowRequest[], peek: boolean): Promise<ModelResult[]>
  free(slots: readonly { key: string; slot: number }[]): Promise<number>
  extend(slots: readonly { key: string; slot: number }[], ms: number): Promise<number>
  settle(
    requests: readonly { key: string; windowMs: number; recordedUs: number; delta: number }[],
    id: string,
  ): Promise<{ outcome: string; used: readonly number[] }>
  refund(
    requests: readonly { key: string; windowMs: number; recordedUs: number; units: number }[],
    id: string,
  ): Promise<{ units: number; outcome: string }>
}

export interface SettleStep {
  readonly op: 'consume' | 'peek' | 'settle' | 'refund' | 'free' | 'extend'
  /** No time at all, an advance (a share of the first window), or to 1 tick before, at or after an exit. */
  readonly time: 'same' | 'advance' | 'boundary'
  readonly advance: number
  readonly boundary: number
  /** Which windows a call asks: the first rate window always, the second (tokens) and the slot window or not. */
  readonly tokens: boolean
  readonly slot: boolean
  readonly shadow: 'none' | 'tokens' | 'slot'
  readonly costA: number
  readonly costB: number
  /** A settle's signed deltas; `retry`: the last settle or refund sent again with its id. */
  readonly deltaA: number
  readonly deltaB: number
  readonly retry: boolean
  /** A settle or refund applied whose answer is lost: the store's reply is not read. */
  readonly lost: boolean
  /** Which admission or slot, how far off a slot's id (a forged one), how many slots, for how long. */
  readonly pick: number
  readonly forge: number
  readonly two: boolean
  readonly ms: number
}

export interface SettleConfig {
  /** Limits: requests, tokens, slots. */
  readonly limits: readonly [number, number, number]
  /** Windows in ms: requests, tokens, and the slots' life. */
  readonly windowsMs: readonly [number, number, number]
}

/**
 * Runs `steps` on fresh keys (`keys`: requests, tokens, slots) of `subject` and on the model, comparing every
 * reply; returns how many replies were compared. `stepUs`: the clock's resolution (1 000 for the memory store,
 * whose times are ms). `startUs`: the first time. `seen` tallies what the replies were, so that a test can say
 * that each case came up.
 */
export async function compareSettleModel(
  subject: SettleSubject,
  keys: readonly [string, string, string],
  { limits, windowsMs }: SettleConfig,
  steps: readonly SettleStep[],
  stepUs: number,
  startUs: number,
  check: (actual: unknown, expected: unknown, what: string) => void,
  seen: Map<string, number> = new Map(),
): Promise<number> {
  const saw = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1)
  const rates = [new RateModel(windowsMs[0] * 1000), new RateModel(windowsMs[1] * 1000)] as const
  const slots = new SlotModel(windowsMs[2] * 1000)
  // Each admission's marker (its id's): until when, and what its settle moved in each window (none once refunded).
  const markers = new Map<string, { until: number; moved?: number[] }>()
  const admissions: { atA: number; atB: number | undefined; costA: number; costB: number; id: string }[] = []
  const ids: number[] = []
  let last: { admission: number; deltas: readonly [number, number] } | undefined
  let nowUs = startUs
  let compared = 0
  for (const [i, step] of steps.entries()) {
    if (step.time === 'advance') {
      nowUs += Math.max(stepUs, Math.floor((step.advance * windowsMs[0]) / 1000 / stepUs) * stepUs)
    } else if (step.time === 'boundary') {
      // To the soonest exit still ahead: a rate entry's, or a slot's end; give or take a tick.
      const exits = [...rates.flatMap((r) => r.entries.map((e) => e.at + r.windowUs)), ...slots.ends.values()].filter(
        (t) => t > nowUs,
      )
      if (exits.length > 0) nowUs = Math.max(nowUs, Math.min(...exits) + step.boundary * stepUs)
    }
    subject.setNow(nowUs)
    const what = `step ${i} (${step.op}) at ${nowUs} µs`

    if (step.op === 'consume' || step.op === 'peek') {
      const peek = step.op === 'peek'
      const windows: ModelWindowRequest[] = [
        { key: keys[0], limit: limits[0], windowMs: windowsMs[0], cost: 1 + (step.costA % limits[0]) },
      ]
      if (step.tokens) {
        const shadow = step.shadow === 'tokens' ? { shadow: true as const } : {}
        windows.push({ key: keys[1], limit: limits[1], windowMs: windowsMs[1], cost: step.costB, ...shadow })
      }
      if (step.slot) {
        const shadow = step.shadow === 'slot' ? { shadow: true as const } : {}
        windows.push({
          key: keys[2],
          limit: limits[2],
          windowMs: windowsMs[2],
          cost: step.costA,
          slots: true,
          ...shadow,
        })
      }
      const models = windows.map((w) => (w.slots ? slots : w.key === keys[0] ? rates[0] : rates[1]))
      const expected = windows.map((w, j) => {
        const model = models[j] as RateModel | SlotModel
        return model instanceof SlotModel ? model.answer(nowUs, w.limit) : model.answer(nowUs, w.limit, w.cost)
      })
      const several = windows.length > 1
      const admitted = !peek && expected.every((e, j) => e.allowed || (several && windows[j]?.shadow))
      const liveIds = slots.live(nowUs)
      const actual = await subject.decide(windows, peek)
      const admission = {
        atA: 0,
        atB: undefined as number | undefined,
        costA: 0,
        costB: 0,
        id: `a${admissions.length}`,
      }
      for (const [j, w] of windows.entries()) {
        const e = expected[j] as ModelResult
        const model = models[j] as RateModel | SlotModel
        if (!admitted || !e.allowed) continue
        if (model instanceof SlotModel) {
          const id = actual[j]?.recorded
          check(typeof id === 'number' && !liveIds.includes(id), true, `${what}: slot id ${id} is no live slot's`)
          model.ends.set(id as number, nowUs + model.ttlUs)
          ids.push(id as number)
          e.recorded = id as number
          e.remaining -= 1
          e.resetMs = model.answer(nowUs, w.limit).resetMs
        } else {
          const at = model.record(nowUs, w.cost)
          e.recorded = at
          e.remaining -= w.cost
          e.resetMs = Math.ceil((at + model.windowUs - nowUs) / 1000)
          if (model === rates[0]) {
            admission.atA = at
            admission.costA = w.cost
          } else {
            admission.atB = at
            admission.costB = w.cost
          }
        }
      }
      if (admitted) admissions.push(admission)
      if (!peek) saw(admitted ? (step.slot ? 'admitted with a slot' : 'admitted') : 'denied')
      if (!peek && step.slot && !expected.at(-1)?.allowed) saw('denied a slot')
      check(actual, expected, what)
      compared++
      continue
    }

    if (step.op === 'settle' || step.op === 'refund') {
      const picked =
        step.retry && last ? last : { admission: step.pick % Math.max(1, admissions.length), deltas: [0, 0] as const }
      const admission = admissions[picked.admission]
      if (!admission) continue
      const deltas = step.retry && last ? last.deltas : ([step.deltaA, step.deltaB] as const)
      const { id } = admission
      const marker = markers.get(id)
      // Only while its marker has long to live (a real second or more), if it has one: a Redis marker's TTL runs on
      // the server's own clock, not the test's, so one past its end on the test's clock may still be there.
      if (marker && marker.until - nowUs < 2_000_000) continue
      const live = marker
      const windows = [{ key: keys[0], windowMs: windowsMs[0], recordedUs: admission.atA, cost: admission.costA }]
      if (admission.atB !== undefined) {
        windows.push({ key: keys[1], windowMs: windowsMs[1], recordedUs: admission.atB, cost: admission.costB })
      }
      const models = windows.map((r) => (r.key === keys[0] ? rates[0] : rates[1]))
      const used = () => models.map((m) => m.used(nowUs))
      const entries = windows.map((r, j) => models[j]?.entry(nowUs, r.recordedUs))
      const until = Math.max(...windows.map((r) => r.recordedUs + r.windowMs * 1000))
      if (step.lost) saw(`${step.op} answer lost`)
      last = { admission: picked.admission, deltas }

      if (step.op === 'settle') {
        const requests = windows.map(({ key, windowMs, recordedUs }, j) => ({
          key,
          windowMs,
          recordedUs,
          delta: deltas[j] as number,
        }))
        let expected: { outcome: string; used: number[] }
        if (live) expected = { outcome: live.moved ? 'already-settled' : 'refunded', used: used() }
        else if (entries.every((e) => e === undefined)) expected = { outcome: 'expired', used: used() }
        else {
          const moved = requests.map((r, j) => {
            const entry = entries[j]
            if (!entry) return 0
            if (r.delta < -entry.units) saw('settled down, capped')
            const by = Math.max(r.delta, -entry.units)
            entry.units += by
            return by
          })
          markers.set(id, { until, moved })
          expected = { outcome: 'settled', used: used() }
        }
        saw(expected.outcome)
        if (expected.outcome === 'settled' && requests.some((r) => r.delta > 0)) saw('settled up')
        const actual = await subject.settle(requests, id)
        if (!step.lost) check(actual, expected, what)
      } else {
        const requests = windows.map(({ key, windowMs, recordedUs, cost }) => ({
          key,
          windowMs,
          recordedUs,
          units: cost,
        }))
        let expected: { units: number; outcome: string }
        if (live && !live.moved) expected = { units: 0, outcome: 'already-refunded' }
        else {
          if (live?.moved) saw('refund after a settle')
          // The admission's units and what its settle moved, never less than none; at most what the entry holds.
          const removed = requests.map((r, j) =>
            Math.min(Math.max(0, r.units + (live?.moved?.[j] ?? 0)), entries[j]?.units ?? 0),
          )
          const most = Math.max(...removed)
          if (most === 0) expected = { units: 0, outcome: 'expired' }
          else {
            for (const [j, by] of removed.entries()) {
              const entry = entries[j]
              if (entry) entry.units -= by
            }
            markers.set(id, { until })
            expected = { units: most, outcome: 'refunded' }
          }
        }
        saw(`refund ${expected.outcome}`)
        const actual = await subject.refund(requests, id)
        if (!step.lost) check(actual, expected, what)
      }
      compared++
      continue
    }

    // free or extend: one or two slots taken before (or an id near one: a forged one).
    const base = ids[step.pick % Math.max(1, ids.length)]
    if (base === undefined) continue
    const picked = [{ key: keys[2], slot: base + step.forge }]
    if (step.two) picked.push({ key: keys[2], slot: ids[(step.pick + 1) % ids.length] as number })
    let count = 0
    saw(step.forge > 0 ? 'forged id' : 'taken id')
    if (step.op === 'free') {
      for (const { slot } of picked) {
        if (slots.isLive(slot, nowUs)) count++
        slots.ends.delete(slot)
      }
      saw(count > 0 ? 'freed' : 'freed none')
      check(await subject.free(picked), count, what)
    } else {
      const ms = 1 + (step.ms % (2 * windowsMs[2]))
      for (const { slot } of picked) {
        if (!slots.isLive(slot, nowUs)) continue
        count++
        slots.ends.set(slot, Math.max(slots.ends.get(slot) as number, nowUs + ms * 1000))
      }
      saw(count > 0 ? 'extended' : 'extended none')
      check(await subject.extend(picked, ms), count, what)
    }
    compared++
  }
  return compared
}

/** Random schedules of up to `maxLength` steps. */
export function settleSteps(maxLength: number) {
  const step = fc.record({
    op: fc.constantFrom('consume', 'consume', 'consume', 'peek', 'settle', 'settle', 'refund', 'free', 'extend'),
    time: fc.constantFrom('same', 'same', 'advance', 'advance', 'boundary'),
    // Up to half a window, scaled to the first window, so that units both stay and leave.
    advance: fc.integer({ min: 1, max: 500_000 }),
    boundary: fc.integer({ min: -1, max: 1 }),
    tokens: fc.boolean(),
    slot: fc.boolean(),
    shadow: fc.constantFrom('none', 'none', 'tokens', 'slot'),
    costA: fc.nat({ max: 1_000 }),
    costB: fc.integer({ min: 1, max: 400 }),
    deltaA: fc.integer({ min: -3, max: 3 }),
    deltaB: fc.oneof(fc.integer({ min: -400, max: 400 }), fc.integer({ min: -5, max: 5 })),
    retry: fc.boolean(),
    lost: fc.boolean(),
    pick: fc.nat(),
    forge: fc.constantFrom(0, 0, 0, 1, 2),
    two: fc.boolean(),
    ms: fc.nat(),
  }) as fc.Arbitrary<SettleStep>
  return fc.array(step, { minLength: 1, maxLength, size: 'max' })
}

/**
 * Limits and windows: a few requests, up to 1 000 tokens (a call's tokens reach 400), 1 to 3 slots; windows and
 * the slots' life of 5 to 60 s, longer than a schedule runs on a real server's clock.
 */
export const settleConfig = (): fc.Arbitrary<SettleConfig> =>
  fc.record({
    limits: fc.tuple(
      fc.integer({ min: 1, max: 8 }),
      fc.integer({ min: 400, max: 1_000 }),
      fc.integer({ min: 1, max: 3 }),
    ),
    windowsMs: fc.tuple(
      fc.integer({ min: 5_000, max: 60_000 }),
      fc.integer({ min: 5_000, max: 60_000 }),
      fc.integer({ min: 5_000, max: 60_000 }),
    ),
  })
