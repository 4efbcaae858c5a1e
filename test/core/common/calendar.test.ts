import { expect } from 'chai'
import {
  type Calendar,
  checkAnchor,
  checkTimeZone,
  type PeriodUnit,
  periodAt,
} from '../../../packages/core/src/common/calendar.js'
import { createRateLimiter, memoryStore } from '../../../packages/core/src/index.js'

// The reference: each local date's first instant, found by reading instants with Intl alone (a scan every 15
// minutes, then a search to the millisecond where the date changes), with the weekday and the days of each month
// as Intl names them. None of calendar.ts's arithmetic is used.
interface LocalDay {
  readonly date: string
  readonly start: number
  readonly weekday: number
}
const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday']

function referenceDays(timeZone: string, from: string, to: string): LocalDay[] {
  const dateOf = new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' })
  const weekdayOf = new Intl.DateTimeFormat('en-GB', { timeZone, weekday: 'long' })
  const local = (at: number) => dateOf.format(at)
  const days: LocalDay[] = []
  const step = 15 * 60_000
  let at = Date.parse(`${from}T00:00:00Z`) - 3 * 86_400_000
  const end = Date.parse(`${to}T00:00:00Z`) + 86_400_000
  let date = local(at)
  for (; at < end; at += step) {
    const next = local(at + step)
    if (next === date) continue
    let lo = at + 1
    let hi = at + step
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2)
      if (local(mid) === next) hi = mid
      else lo = mid + 1
    }
    days.push({ date: next, start: lo, weekday: WEEKDAYS.indexOf(weekdayOf.format(lo)) + 1 })
    date = next
  }
  return days
}

/** The reference period starts of a unit and anchor: the first instants of the dates that start one. */
function referenceStarts(days: readonly LocalDay[], unit: PeriodUnit, anchor: number): number[] {
  if (unit === 'day') return days.map((d) => d.start)
  if (unit === 'week') return days.filter((d) => d.weekday === anchor).map((d) => d.start)
  // A month's days, counted as Intl lists them: the anchor's day, or the month's last if it has fewer.
  const byMonth = new Map<string, LocalDay[]>()
  for (const day of days) {
    const month = day.date.slice(0, 7)
    byMonth.set(month, [...(byMonth.get(month) ?? []), day])
  }
  const starts: number[] = []
  // The scan's first and last months are partial: their length is unknown.
  for (const monthDays of [...byMonth.values()].slice(1, -1)) {
    const last = Number((monthDays.at(-1) as LocalDay).date.slice(8))
    const want = Math.min(anchor, last)
    const day = monthDays.find((d) => Number(d.date.slice(8)) === want)
    if (day) starts.push(day.start)
  }
  return starts
}

/** Checks periodAt at each start, a millisecond before it and a few instants inside each period. */
function compare(calendar: Calendar, starts: readonly number[]) {
  let checked = 0
  for (let i = 1; i + 1 < starts.length; i++) {
    const start = starts[i] as number
    const end = starts[i + 1] as number
    for (const at of [start, start + 1, Math.floor((start + end) / 2), end - 1]) {
      const period = periodAt(calendar, at)
      expect(
        { start: period.start, end: period.end },
        `${calendar.unit} ${calendar.timeZone} ${calendar.anchor} ${new Date(at).toISOString()}`,
      ).to.deep.equal({ start, end })
      checked++
    }
  }
  return checked
}

describe('calendar periods (a model over a year of days, against Intl read independently)', () => {
  for (const timeZone of ['America/New_York', 'Europe/Berlin']) {
    const days = referenceDays(timeZone, '2023-01-01', '2025-03-01')

    it(`${timeZone}: every day of 2024, both daylight-saving changes included`, () => {
      const year = days.filter((d) => d.date.startsWith('2024'))
      const lengths = new Set(year.map((d) => ((days[days.indexOf(d) + 1] as LocalDay).start - d.start) / 3.6e6))
      // 23- and 25-hour days are in the year: both changes are covered.
      expect([...lengths].sort()).to.deep.equal([23, 24, 25])
      expect(compare({ unit: 'day', timeZone }, referenceStarts(days, 'day', 1))).to.be.above(4 * 365 * 2)
    })

    it(`${timeZone}: weeks from each weekday`, () => {
      for (let anchor = 1; anchor <= 7; anchor++)
        compare({ unit: 'week', timeZone, anchor }, referenceStarts(days, 'week', anchor))
    })

    it(`${timeZone}: months from anchors 1 and 28 to 31, in a common year (2023) and a leap year (2024)`, () => {
      for (const anchor of [1, 28, 29, 30, 31]) {
        const starts = referenceStarts(days, 'month', anchor)
        expect(starts).to.have.length(26)
        compare({ unit: 'month', timeZone, anchor }, starts)
      }
      // Anchor 31 in February: the 28th in 2023, the 29th in 2024.
      const feb = (year: string) =>
        new Intl.DateTimeFormat('en-CA', { timeZone }).format(
          periodAt({ unit: 'month', timeZone, anchor: 31 }, Date.parse(`${year}-03-15T12:00:00Z`)).start,
        )
      expect([feb('2023'), feb('2024')]).to.deep.equal(['2023-02-28', '2024-02-29'])
    })

    it(`${timeZone}: a memory store on a test clock denies until the next local midnight, every day of 2024`, async () => {
      let now = 0
      const limiter = createRateLimiter({
        store: memoryStore({ clock: () => now }),
        limit: 1,
        period: 'day',
        timeZone,
        local: false,
      })
      const starts = referenceStarts(days, 'day', 1).filter((s) => new Date(s).getUTCFullYear() === 2024)
      for (let i = 0; i + 1 < starts.length; i++) {
        const start = starts[i] as number
        const next = starts[i + 1] as number
        now = start + 3_600_000
        expect((await limiter.consume('t')).allowed).to.equal(true)
        const denied = await limiter.consume('t')
        expect([denied.allowed, denied.retryAfterMs]).to.deep.equal([false, next - now])
        now = next - 1
        expect((await limiter.consume('t')).allowed).to.equal(false)
      }
    })
  }
})

describe('calendar options', () => {
  it('takes IANA zones as Intl names them, and refuses anything else with a coded error', () => {
    expect(checkTimeZone('UTC', 'timeZone')).to.equal('UTC')
    expect(checkTimeZone('utc', 'timeZone')).to.equal('UTC')
    expect(checkTimeZone('Pacific/Auckland', 'timeZone')).to.equal('Pacific/Auckland')
    for (const bad of ['../../etc', 'Mars/Olympus', '', '+05:00', 'Europe/Berlin\n', 5, null, 'a'.repeat(100)]) {
      expect(() => checkTimeZone(bad, 'timeZone'), String(bad))
        .to.throw(/invalid option `timeZone`.*IANA time zone/)
        .with.property('code', 'ERR_FLEETLIMIT_OPTION')
    }
  })

  it('takes anchors 1-31 for months and 1-7 for weeks, none for days', () => {
    expect(checkAnchor(31, 'month', 'anchor')).to.equal(31)
    expect(checkAnchor(7, 'week', 'anchor')).to.equal(7)
    for (const bad of [0, 32, 1e9, Number.NaN, 1.5, '1', Number.POSITIVE_INFINITY]) {
      expect(() => checkAnchor(bad, 'month', 'anchor'), String(bad)).to.throw(/day of the month from 1 to 31/)
    }
    expect(() => checkAnchor(8, 'week', 'anchor')).to.throw(/1 \(Monday\) to 7 \(Sunday\)/)
    expect(() => checkAnchor(1, 'day', 'anchor')).to.throw(/no anchor for a daily period/)
  })

  it('starts a day at the jump when midnight falls in a daylight-saving gap (Santiago, 2024-09-08)', () => {
    const { start, end } = periodAt({ unit: 'day', timeZone: 'America/Santiago' }, Date.parse('2024-09-08T12:00:00Z'))
    expect([new Date(start).toISOString(), (end - start) / 3.6e6]).to.deep.equal(['2024-09-08T04:00:00.000Z', 23])
  })
})

describe('calendar policies refuse hostile options with a coded error, never a crash', () => {
  const refuses = (make: () => unknown, option: string) => {
    let error: unknown
    try {
      make()
    } catch (thrown) {
      error = thrown
    }
    expect(error, option).to.have.property('code', 'ERR_FLEETLIMIT_OPTION')
    expect(error).to.have.property('option', option)
  }

  it('at construction: a zone that is a path, an unknown period, a window or buckets beside a period', () => {
    refuses(() => createRateLimiter({ limit: 1, period: 'month', timeZone: '../../etc' }), 'timeZone')
    refuses(() => createRateLimiter({ limit: 1, period: 'year' as never }), 'period')
    refuses(() => createRateLimiter({ limit: 1, period: 'day', window: '1d' }), 'window')
    refuses(() => createRateLimiter({ limit: 1, period: 'day', algorithm: 'bucketed' }), 'algorithm')
    refuses(() => createRateLimiter({ limit: 1, window: '1m', timeZone: 'UTC' }), 'timeZone')
    refuses(() => createRateLimiter({ concurrency: 1, period: 'day' }), 'period')
  })

  it('on a call: anchors of 1e9, NaN, 0 or a string; an anchor for a daily policy or none at all', async () => {
    const monthly = createRateLimiter({ limit: 5, period: 'month', local: false })
    for (const anchor of [1e9, Number.NaN, 0, '15', -1, 2 ** 53]) {
      const error = await monthly.consume('t', { anchor: anchor as number }).catch((e: unknown) => e)
      expect(error, String(anchor)).to.have.property('code', 'ERR_FLEETLIMIT_OPTION')
    }
    const daily = createRateLimiter({ limit: 5, period: 'day' })
    expect(await daily.consume('t', { anchor: 1 }).catch((e: unknown) => e)).to.have.property('option', 'anchor')
    const rate = createRateLimiter({ limit: 5, window: '1m' })
    expect(await rate.peek('t', { anchor: 1 }).catch((e: unknown) => e)).to.have.property('option', 'anchor')
    // A valid anchor still decides.
    expect((await monthly.consume('t', { anchor: 31 })).allowed).to.equal(true)
  })
})
