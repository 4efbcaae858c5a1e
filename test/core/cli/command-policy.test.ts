import { expect } from 'chai'
import type { Command, PolicyArgs } from '../../../packages/core/src/cli/args.js'
import { CliError } from '../../../packages/core/src/cli/cli-error.js'
import { asCliError, calendarOf, fieldsOf, policyOf } from '../../../packages/core/src/cli/command-policy.js'
import { definePolicy } from '../../../packages/core/src/limiter/policy.js'

const command = (policy: PolicyArgs, anchor?: number) => ({ policy, ...(anchor && { anchor }) }) as Command

/** The usage error `make` throws: its message and exit code. */
function usageError(make: () => unknown): [string, number] {
  try {
    make()
  } catch (error) {
    if (!(error instanceof CliError)) throw error
    return [error.message, error.exitCode]
  }
  throw new Error('no error')
}

describe('core/cli/command-policy: the policy a command names with its flags', () => {
  it('a rate policy: its window as a duration or ms, its limit the largest when not given', () => {
    const policy = policyOf(command({ name: 'api', window: '60000' }))
    expect(fieldsOf(policy)).to.deep.equal({ name: 'api', window: 60_000, algorithm: 'sliding-log' })
    expect(policy.limit).to.equal(1_000_000_000)
    const bucketed = policyOf(command({ name: 'api', window: '1h', algorithm: 'bucketed', buckets: 12 }))
    expect(fieldsOf(bucketed)).to.deep.equal({ name: 'api', window: 3_600_000, algorithm: 'bucketed', buckets: 12 })
  })

  it('an in-flight policy: named by --slot-ttl and --concurrency', () => {
    const policy = policyOf(command({ name: 'uploads', slotTtl: '90s' }))
    expect(fieldsOf(policy)).to.deep.equal({
      name: 'uploads',
      window: 90_000,
      algorithm: 'sliding-log',
      inFlight: true,
    })
  })

  it('a calendar policy: named by --period and --time-zone (UTC when not given), in place of --window', () => {
    const policy = policyOf(command({ name: 'plan', period: 'month', timeZone: 'Europe/Berlin' }))
    expect(fieldsOf(policy)).to.deep.equal({
      name: 'plan',
      window: 31 * 86_400_000 + 3_600_000,
      algorithm: 'sliding-log',
      period: 'month',
      timeZone: 'Europe/Berlin',
    })
    expect(fieldsOf(policyOf(command({ name: 'daily', period: 'day' })))).to.deep.include({ timeZone: 'UTC' })
  })

  it('calendarOf: the period, the zone and --anchor a peek decides in; none for a window', () => {
    const plan = { name: 'plan', period: 'month', timeZone: 'Europe/Berlin' }
    const fields = fieldsOf(policyOf(command(plan)))
    expect(calendarOf(command(plan, 31), fields)).to.deep.equal({
      unit: 'month',
      timeZone: 'Europe/Berlin',
      anchor: 31,
    })
    expect(calendarOf(command(plan), fields)).to.deep.equal({ unit: 'month', timeZone: 'Europe/Berlin' })
    const api = { name: 'api', window: '1m' }
    expect(calendarOf(command(api), fieldsOf(policyOf(command(api))))).to.equal(undefined)
    expect(usageError(() => calendarOf(command(api, 3), fieldsOf(policyOf(command(api)))))).to.deep.equal([
      '--anchor is a calendar policy’s: give --period (fleetlimit --help)',
      2,
    ])
    const [message, code] = usageError(() => calendarOf(command(plan, 32), fields))
    expect([message.slice(0, message.indexOf(';')), code]).to.deep.equal(['fleetlimit: invalid --anchor: got 32', 2])
    const daily = fieldsOf(policyOf(command({ name: 'daily', period: 'day' })))
    expect(usageError(() => calendarOf(command({}, 1), daily))[0]).to.equal(
      'fleetlimit: invalid --anchor: got 1; expected no anchor for a daily period: a day starts at midnight.',
    )
  })

  it('usage errors (exit 2) for a calendar policy’s flags beside a window’s or a slot’s', () => {
    expect(usageError(() => policyOf(command({ name: 'plan', timeZone: 'UTC' })))).to.deep.equal([
      'give the calendar policy’s period: --period day, week or month (fleetlimit --help)',
      2,
    ])
    expect(usageError(() => policyOf(command({ name: 'plan', period: 'day', window: '1d' })))[0]).to.equal(
      'fleetlimit: invalid --window: got "1d"; expected no window beside `period`: a policy is a window or a calendar.',
    )
    expect(usageError(() => policyOf(command({ name: 'plan', period: 'year' })))[0]).to.equal(
      'fleetlimit: invalid --period: got "year"; expected one of "day", "week", "month".',
    )
    expect(usageError(() => policyOf(command({ name: 'plan', period: 'day', timeZone: '../etc' })))[0]).to.match(
      /^fleetlimit: invalid --time-zone: got "\.\.\/etc"; expected an IANA time zone name/,
    )
    expect(usageError(() => policyOf(command({ name: 'par', slotTtl: '1m', period: 'day' })))[0]).to.equal(
      '--period is a rate policy’s: an in-flight policy is named by --slot-ttl (its slot life) and --concurrency ' +
        '(fleetlimit --help)',
    )
  })

  it('usage errors (exit 2) for what names no policy, and a rate flag beside an in-flight one', () => {
    expect(usageError(() => policyOf(command({})))).to.deep.equal([
      'give the policy the key belongs to: --policy <name> --window <duration> (fleetlimit --help)',
      2,
    ])
    expect(usageError(() => policyOf(command({ name: 'api' })))).to.deep.equal([
      'give the policy’s window: --window <duration>, such as 1m (fleetlimit --help)',
      2,
    ])
    expect(usageError(() => policyOf(command({ concurrency: 3, limit: 5 })))).to.deep.equal([
      '--limit is a rate policy’s: an in-flight policy is named by --slot-ttl (its slot life) and --concurrency (fleetlimit --help)',
      2,
    ])
  })

  it('an option error of definePolicy names the flag, not the option', () => {
    const [message, code] = usageError(() => asCliError(() => definePolicy({ limit: 5, window: 'soon' as never })))
    expect(code).to.equal(2)
    expect(message).to.match(/^fleetlimit: invalid --window: got "soon"/)
  })

  it('any other error goes through as it is', () => {
    const error = new RangeError('not ours')
    expect(() =>
      asCliError(() => {
        throw error
      }),
    ).to.throw(error)
  })
})
