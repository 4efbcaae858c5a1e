// Retry-After (RFC 9110 §10.2.3): delta-seconds, or an HTTP-date in any of the three forms a recipient must
// accept (§5.6.7). Dates are parsed here, not by Date.parse, whose reading of the obsolete forms is
// implementation-defined (V8 reads the asctime form as local time).

const DAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun']
const LONG_DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday']
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']

const TIME = '(\\d{2}):(\\d{2}):(\\d{2})'
// Sun, 06 Nov 1994 08:49:37 GMT
const IMF_FIXDATE = new RegExp(`^([A-Za-z]{3}), (\\d{2}) ([A-Za-z]{3}) (\\d{4}) ${TIME} GMT$`)
// Sunday, 06-Nov-94 08:49:37 GMT
const RFC850_DATE = new RegExp(`^([A-Za-z]{6,9}), (\\d{2})-([A-Za-z]{3})-(\\d{2}) ${TIME} GMT$`)
// Sun Nov  6 08:49:37 1994
const ASCTIME_DATE = new RegExp(`^([A-Za-z]{3}) ([A-Za-z]{3}) ([\\d ]\\d) ${TIME} (\\d{4})$`)
const DELTA_SECONDS = /^\d+$/

/**
 * The time an HTTP-date names, in ms since the epoch; undefined when `value` is no HTTP-date or names no real
 * instant (31 Feb, 25:00).
 */
export function parseHttpDate(value: string, now = Date.now()): number | undefined {
  const text = value.trim()
  let match = IMF_FIXDATE.exec(text)
  if (match) {
    const [, day, date, month, year, h, m, s] = match
    return DAYS.includes(titleCase(day)) ? utc(year, month, date, h, m, s) : undefined
  }
  match = RFC850_DATE.exec(text)
  if (match) {
    const [, day, date, month, yy, h, m, s] = match
    return LONG_DAYS.includes(titleCase(day)) ? utc(String(fullYear(Number(yy), now)), month, date, h, m, s) : undefined
  }
  match = ASCTIME_DATE.exec(text)
  if (match) {
    const [, day, month, date, h, m, s, year] = match
    return DAYS.includes(titleCase(day)) ? utc(year, month, date, h, m, s) : undefined
  }
  return undefined
}

/**
 * The wait a Retry-After value asks for, in whole ms from `now` (0 for a date already past); undefined when the
 * value is absent or invalid, which the caller treats as no Retry-After at all. Absurdly large delays come out
 * finite (at most Number.MAX_SAFE_INTEGER): capping them is the caller's call.
 *
 * @example
 * ```ts
 * parseRetryAfter('120')                           // 120000
 * parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT') // ms until then, or 0 once it is past
 * parseRetryAfter('soon')                          // undefined
 * ```
 */
export function parseRetryAfter(value: string | null | undefined, now = Date.now()): number | undefined {
  if (value === null || value === undefined) return undefined
  const text = value.trim()
  if (DELTA_SECONDS.test(text)) return Math.min(Number(text) * 1_000, Number.MAX_SAFE_INTEGER)
  const at = parseHttpDate(text, now)
  return at === undefined ? undefined : Math.max(0, Math.ceil(at - now))
}

/**
 * The wait a response's Retry-After asks for, in ms. A date is measured from the response's own Date header when
 * it has a valid one, so that a skewed clock on this machine does not stretch or shorten the wait.
 */
export function retryAfterOf(headers: Headers, now = Date.now()): number | undefined {
  const value = headers.get('retry-after')
  if (value === null) return undefined
  const sent = headers.get('date')
  const serverNow = sent === null ? undefined : parseHttpDate(sent, now)
  return parseRetryAfter(value, serverNow ?? now)
}

function titleCase(word: string | undefined): string {
  return word === undefined ? '' : word.charAt(0).toUpperCase() + word.slice(1).toLowerCase()
}

/** A two-digit year: the one in this century unless that is more than 50 years ahead (RFC 9110 §5.6.7). */
function fullYear(yy: number, now: number): number {
  const current = new Date(now).getUTCFullYear()
  let year = current - (current % 100) + yy
  if (year > current + 50) year -= 100
  else if (year < current - 50) year += 100
  return year
}

function utc(...parts: (string | undefined)[]): number | undefined {
  const [yearText, monthText, dateText, hText, mText, sText] = parts
  const year = Number(yearText)
  const month = MONTHS.indexOf(titleCase(monthText))
  const date = Number(dateText?.trim())
  const [h, m, s] = [Number(hText), Number(mText), Number(sText)]
  // 60 is a leap second, which the grammar allows; it reads as the next minute's first.
  if (month < 0 || date < 1 || h > 23 || m > 59 || s > 60) return undefined
  const at = new Date(0)
  // setUTCFullYear, unlike Date.UTC, does not read years 0 to 99 as 1900 to 1999.
  at.setUTCFullYear(year, month, date)
  // A day past the month's end rolls over into the next month: no such date.
  if (at.getUTCMonth() !== month) return undefined
  at.setUTCHours(h, m, s, 0)
  return at.getTime()
}
