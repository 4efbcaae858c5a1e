import { expect } from 'chai'
import { parseHttpDate, parseRetryAfter, retryAfterOf } from '../../../packages/core/src/outbound/retry-after.js'

// RFC 9110's example instant, in its three forms.
const INSTANT = Date.UTC(1994, 10, 6, 8, 49, 37)
const IMF = 'Sun, 06 Nov 1994 08:49:37 GMT'
const RFC850 = 'Sunday, 06-Nov-94 08:49:37 GMT'
const ASCTIME = 'Sun Nov  6 08:49:37 1994'

describe('parseRetryAfter', () => {
  it('reads delta-seconds as whole ms', () => {
    expect(parseRetryAfter('0')).to.equal(0)
    expect(parseRetryAfter('2')).to.equal(2_000)
    expect(parseRetryAfter('120')).to.equal(120_000)
    expect(parseRetryAfter(' 7 ')).to.equal(7_000)
    expect(parseRetryAfter('007')).to.equal(7_000)
  })

  it('reads an HTTP-date, in each of the three forms, as the ms from now until then', () => {
    const now = INSTANT - 2_500
    expect(parseRetryAfter(IMF, now)).to.equal(2_500)
    expect(parseRetryAfter(RFC850, now)).to.equal(2_500)
    expect(parseRetryAfter(ASCTIME, now)).to.equal(2_500)
  })

  it('reads a date already past as no wait', () => {
    expect(parseRetryAfter(IMF, INSTANT)).to.equal(0)
    expect(parseRetryAfter(IMF, INSTANT + 60_000)).to.equal(0)
  })

  it('treats a missing or invalid value as absent', () => {
    for (const value of [
      null,
      undefined,
      '',
      '   ',
      'soon',
      '-1',
      '1.5',
      '+3',
      '1e3',
      '0x10',
      '2 seconds',
      '120, 120',
      'Sun, 06 Nov 1994 08:49:37',
      'Sun, 06 Nov 1994 08:49:37 UTC',
      'Sun, 6 Nov 1994 08:49:37 GMT',
      'Xyz, 06 Nov 1994 08:49:37 GMT',
      'Sun, 06 Foo 1994 08:49:37 GMT',
      'Sun, 31 Feb 2030 08:49:37 GMT',
      'Sun, 00 Nov 1994 08:49:37 GMT',
      'Sun, 06 Nov 1994 24:00:00 GMT',
      'Sun, 06 Nov 1994 08:60:00 GMT',
      'Sun, 06 Nov 1994 08:49:61 GMT',
      '1994-11-06T08:49:37Z',
    ]) {
      expect(parseRetryAfter(value, INSTANT), String(value)).to.equal(undefined)
    }
  })

  it('gives a finite number for an absurd delay: capping it is the caller’s call', () => {
    expect(parseRetryAfter('99999999999')).to.equal(99_999_999_999_000)
    expect(parseRetryAfter('9'.repeat(400))).to.equal(Number.MAX_SAFE_INTEGER)
  })
})

describe('parseHttpDate', () => {
  it('reads the three forms as the same UTC instant, not local time', () => {
    expect(parseHttpDate(IMF)).to.equal(INSTANT)
    expect(parseHttpDate(RFC850, INSTANT)).to.equal(INSTANT)
    expect(parseHttpDate(ASCTIME)).to.equal(INSTANT)
    expect(parseHttpDate('Sun Nov 16 08:49:37 1994')).to.equal(INSTANT + 10 * 86_400_000)
  })

  it('reads names in any case, as recipients are asked to be robust', () => {
    expect(parseHttpDate('sun, 06 NOV 1994 08:49:37 GMT')).to.equal(INSTANT)
  })

  it('reads a two-digit year as this century’s unless that is more than 50 years ahead', () => {
    const in2025 = Date.UTC(2025, 0, 1)
    const year = (value: string) => new Date(parseHttpDate(value, in2025) as number).getUTCFullYear()
    expect(year('Monday, 06-Nov-30 08:49:37 GMT')).to.equal(2030)
    expect(year('Monday, 06-Nov-75 08:49:37 GMT')).to.equal(2075)
    expect(year('Monday, 06-Nov-76 08:49:37 GMT')).to.equal(1976)
    expect(year('Monday, 06-Nov-99 08:49:37 GMT')).to.equal(1999)
    const in2090 = Date.UTC(2090, 0, 1)
    expect(new Date(parseHttpDate('Monday, 06-Nov-05 08:49:37 GMT', in2090) as number).getUTCFullYear()).to.equal(2105)
  })

  it('accepts a leap second, and 29 February only in a leap year', () => {
    expect(parseHttpDate('Sat, 31 Dec 2016 23:59:60 GMT')).to.equal(Date.UTC(2017, 0, 1))
    expect(parseHttpDate('Thu, 29 Feb 2024 00:00:00 GMT')).to.equal(Date.UTC(2024, 1, 29))
    expect(parseHttpDate('Thu, 29 Feb 2023 00:00:00 GMT')).to.equal(undefined)
  })
})

describe('retryAfterOf', () => {
  it('measures a date from the response’s Date header, so a skewed local clock does not change the wait', () => {
    const headers = new Headers({ 'retry-after': 'Sun, 06 Nov 1994 08:49:40 GMT', date: IMF })
    // This machine's clock is an hour ahead of the server's: the wait is still the 3 s the server meant.
    expect(retryAfterOf(headers, INSTANT + 3_600_000)).to.equal(3_000)
  })

  it('measures a date from the local clock when Date is absent or invalid', () => {
    const retryAt = 'Sun, 06 Nov 1994 08:49:40 GMT'
    expect(retryAfterOf(new Headers({ 'retry-after': retryAt }), INSTANT + 1_000)).to.equal(2_000)
    expect(retryAfterOf(new Headers({ 'retry-after': retryAt, date: 'yesterday' }), INSTANT + 1_000)).to.equal(2_000)
  })

  it('reads delta-seconds whatever the Date header says, and nothing without Retry-After', () => {
    expect(retryAfterOf(new Headers({ 'retry-after': '2', date: IMF }), INSTANT + 3_600_000)).to.equal(2_000)
    expect(retryAfterOf(new Headers({ date: IMF }))).to.equal(undefined)
    expect(retryAfterOf(new Headers({ 'retry-after': 'later' }))).to.equal(undefined)
  })
})
