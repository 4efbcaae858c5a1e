// Calendar periods in a time zone: the day, week or month that holds an instant, as epoch ms, from Intl's zone data.
// Pure and synchronous; the limiter and the stores use it (Lua has no zone data: the process sends the boundaries).
import { OptionError } from './errors.js'

/** A calendar policy's period. */
export type PeriodUnit = 'day' | 'week' | 'month'

export const PERIOD_UNITS: readonly PeriodUnit[] = ['day', 'week', 'month']

/** The longest period of each unit, in ms (a 25-hour day, a 31-day month): what a period stands for as a window. */
export const PERIOD_MS: Readonly<Record<PeriodUnit, number>> = {
  day: 90_000_000,
  week: 604_800_000 + 3_600_000,
  month: 31 * 86_400_000 + 3_600_000,
}

/** What a calendar window counts in: its unit, zone and anchor (a month's day 1-31, a week's day 1-7 from Monday). */
export interface Calendar {
  readonly unit: PeriodUnit
  readonly timeZone: string
  readonly anchor?: number
}

/** A period: from `start` (its first instant) to `end` (the next period's start), epoch ms. */
export interface Period {
  readonly start: number
  readonly end: number
}

const DAY_MS = 86_400_000
// An IANA name: letters, digits, `_`, `+`, `-`, in parts joined by `/`: no `..`, no `:` (a key's separator).
const ZONE_PATTERN = /^[A-Za-z][A-Za-z0-9_+-]*(?:\/[A-Za-z0-9_+-]+){0,3}$/
const ZONE_ACCEPTED = "an IANA time zone name such as 'UTC', 'Europe/Berlin' or 'America/New_York'"

/** Formatters by zone: each reads an instant's local date and time. Few zones are in use; bounded all the same. */
const formatters = new Map<string, Intl.DateTimeFormat>()

function formatterOf(timeZone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timeZone)
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      calendar: 'gregory',
      numberingSystem: 'latn',
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
      era: 'short',
    })
    if (formatters.size >= 256) formatters.clear()
    formatters.set(timeZone, formatter)
  }
  return formatter
}

/**
 * A time zone option: an IANA name Intl knows, returned as Intl names it (so that 'utc' and 'UTC' are one zone);
 * anything else (an unknown zone, a path, an offset) throws an OptionError naming `option`.
 */
export function checkTimeZone(value: unknown, option: string): string {
  if (typeof value !== 'string' || value.length > 64 || !ZONE_PATTERN.test(value)) {
    throw new OptionError(option, value, ZONE_ACCEPTED)
  }
  let resolved: string
  try {
    resolved = new Intl.DateTimeFormat('en-US', { timeZone: value }).resolvedOptions().timeZone
  } catch {
    throw new OptionError(option, value, `${ZONE_ACCEPTED} (this Node's Intl does not know this one)`)
  }
  if (!ZONE_PATTERN.test(resolved)) throw new OptionError(option, value, ZONE_ACCEPTED)
  return resolved
}

/** The anchors a unit takes: a month's day 1-31, a week's day 1-7 (Monday is 1); a day takes none. */
export function checkAnchor(value: unknown, unit: PeriodUnit, option: string): number {
  const max = unit === 'month' ? 31 : unit === 'week' ? 7 : 0
  if (max === 0) throw new OptionError(option, value, 'no anchor for a daily period: a day starts at midnight')
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new OptionError(
      option,
      value,
      unit === 'month'
        ? 'a day of the month from 1 to 31 (clamped to the month: 31 starts on the 30th in a 30-day month)'
        : 'a day of the week from 1 (Monday) to 7 (Sunday)',
    )
  }
  return value
}

/** An instant's local wall time in the zone, as if it were UTC (ms), and its local date as a day number. */
function wallOf(formatter: Intl.DateTimeFormat, at: number): { wall: number; day: number } {
  let year = 0
  let month = 0
  let day = 0
  let hour = 0
  let minute = 0
  let second = 0
  let bc = false
  for (const part of formatter.formatToParts(at)) {
    switch (part.type) {
      case 'year':
        year = Number(part.value)
        break
      case 'month':
        month = Number(part.value)
        break
      case 'day':
        day = Number(part.value)
        break
      case 'hour':
        hour = Number(part.value)
        break
      case 'minute':
        minute = Number(part.value)
        break
      case 'second':
        second = Number(part.value)
        break
      case 'era':
        bc = part.value === 'BC' || part.value === 'B'
        break
    }
  }
  const date = new Date(0)
  date.setUTCFullYear(bc ? 1 - year : year, month - 1, day)
  const dayNumber = Math.floor(date.getTime() / DAY_MS)
  const ms = ((at % 1_000) + 1_000) % 1_000
  return { wall: dayNumber * DAY_MS + hour * 3_600_000 + minute * 60_000 + second * 1_000 + ms, day: dayNumber }
}

/**
 * The first instant whose local date in the zone is `day` (a day number) or later: local midnight, or, when
 * midnight falls in a daylight-saving gap, the instant the clocks jump.
 */
function startOfDay(formatter: Intl.DateTimeFormat, day: number): number {
  const wall = day * DAY_MS
  // The offsets a day either side: midnight's own is one of them, unless two changes fall within a day.
  const offsets = [
    wallOf(formatter, wall - DAY_MS).wall - (wall - DAY_MS),
    wallOf(formatter, wall + DAY_MS).wall - (wall + DAY_MS),
  ]
  let found = Number.POSITIVE_INFINITY
  for (const offset of offsets) {
    const at = wall - offset
    if (wallOf(formatter, at).wall === wall) found = Math.min(found, at)
  }
  if (found !== Number.POSITIVE_INFINITY) return found
  // Midnight does not exist that day: the first instant of the date, by a binary search across the jump.
  let lo = wall - Math.max(...offsets) - DAY_MS
  let hi = wall - Math.min(...offsets) + DAY_MS
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2)
    if (wallOf(formatter, mid).day >= day) hi = mid
    else lo = mid + 1
  }
  return lo
}

/** Days in a month of the proleptic Gregorian calendar (month 0-11, any integer: it carries into the year). */
function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month + 1, 0)).getUTCDate()
}

/** The day number of `year`-`month`-min(anchor, the month's days) (month 0-11, carried into the year). */
function anchoredDay(year: number, month: number, anchor: number): number {
  return Math.floor(Date.UTC(year, month, Math.min(anchor, daysIn(year, month))) / DAY_MS)
}

/** The start and next start (day numbers) of the period that holds local date `day`. */
function periodDays(unit: PeriodUnit, day: number, anchor: number): [number, number] {
  if (unit === 'day') return [day, day + 1]
  if (unit === 'week') {
    // 1970-01-01 (day 0) was a Thursday: weekday 4, Monday being 1.
    const weekday = ((((day + 3) % 7) + 7) % 7) + 1
    const start = day - ((weekday - anchor + 7) % 7)
    return [start, start + 7]
  }
  const date = new Date(day * DAY_MS)
  const year = date.getUTCFullYear()
  const month = date.getUTCMonth()
  const here = anchoredDay(year, month, anchor)
  return day >= here ? [here, anchoredDay(year, month + 1, anchor)] : [anchoredDay(year, month - 1, anchor), here]
}

/** Periods last found, by unit, zone and anchor: most calls fall in the period the previous call did. */
const recent = new Map<string, Period>()

/**
 * The period of `calendar` that holds instant `at` (epoch ms): `start <= at < end`. A period starts at the first
 * instant of its first local date (midnight, as the zone has it: a day is 23 or 25 hours long across a
 * daylight-saving change); a week on its anchor's weekday (Monday by default); a month on its anchor's day (the 1st
 * by default), clamped to the month's last day.
 */
export function periodAt(calendar: Calendar, at: number): Period {
  const { unit, timeZone } = calendar
  const anchor = calendar.anchor ?? 1
  const id = `${unit} ${anchor} ${timeZone}`
  const last = recent.get(id)
  if (last !== undefined && last.start <= at && at < last.end) return last
  const formatter = formatterOf(timeZone)
  let [first, next] = periodDays(unit, wallOf(formatter, at).day, anchor)
  let start = startOfDay(formatter, first)
  let end = startOfDay(formatter, next)
  // A local date that repeats (clocks set back across midnight) can put `at` beside its date's period.
  for (let step = 0; step < 4 && (at < start || at >= end); step++) {
    ;[first, next] = periodDays(unit, at < start ? first - 1 : next, anchor)
    start = startOfDay(formatter, first)
    end = startOfDay(formatter, next)
  }
  const period = { start, end }
  if (recent.size >= 4_096) recent.clear()
  recent.set(id, period)
  return period
}

/** The four starts last found, by unit, zone and anchor (see periodStarts). */
const recentStarts = new Map<string, readonly [number, number, number, number]>()

/**
 * The starts of the period before the one that holds `at`, of that one, of the next and of the one after: three
 * periods, so that a store whose clock is a little off the caller's still finds the one that holds its own now.
 */
export function periodStarts(calendar: Calendar, at: number): readonly [number, number, number, number] {
  const id = `${calendar.unit} ${calendar.anchor ?? 1} ${calendar.timeZone}`
  const last = recentStarts.get(id)
  if (last !== undefined && last[1] <= at && at < last[2]) return last
  const { start, end } = periodAt(calendar, at)
  const starts = [periodAt(calendar, start - 1).start, start, end, periodAt(calendar, end).end] as const
  if (recentStarts.size >= 4_096) recentStarts.clear()
  recentStarts.set(id, starts)
  return starts
}
