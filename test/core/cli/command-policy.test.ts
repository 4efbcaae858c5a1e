import { expect } from 'chai'
import type { Command, PolicyArgs } from '../../../packages/core/src/cli/args.js'
import { CliError } from '../../../packages/core/src/cli/cli-error.js'
import { asCliError, fieldsOf, policyOf } from '../../../packages/core/src/cli/command-policy.js'
import { definePolicy } from '../../../packages/core/src/limiter/policy.js'

const command = (policy: PolicyArgs) => ({ policy }) as Command

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
