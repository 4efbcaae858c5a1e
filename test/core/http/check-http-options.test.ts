import { isFleetlimitError } from '@fleetlimit/core'
import { expect } from 'chai'
import { checkHttpOptions, REQUEST_FUNCTIONS } from '../../../packages/core/src/http/check-http-options.js'
import type { HttpRateLimitOptions } from '../../../packages/core/src/http/http-options.js'

/** The OptionError checkHttpOptions throws for `options`: its option and message. */
function refusal(options: HttpRateLimitOptions<unknown>): { option: string; message: string } {
  try {
    checkHttpOptions(options)
  } catch (error) {
    expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION'), String(error)).to.equal(true)
    return { option: (error as { option: string }).option, message: (error as Error).message }
  }
  return expect.fail('checkHttpOptions was expected to throw')
}

describe('checkHttpOptions: an adapter’s option names, and which may be functions', () => {
  it('passes every adapter option, and limit, cost and concurrency as functions of the request', () => {
    expect([...REQUEST_FUNCTIONS]).to.deep.equal(['limit', 'cost', 'concurrency'])
    const options: HttpRateLimitOptions<unknown> = {
      limit: () => 5,
      cost: () => 1,
      concurrency: () => 2,
      window: '1m',
      tenant: () => 't',
      route: () => 'r',
      skip: () => false,
      headers: 'draft-7',
      legacyHeaders: true,
      statusCode: 429,
      ipv6Subnet: 56,
    }
    expect(checkHttpOptions(options)).to.equal(undefined)
  })

  it('refuses any other policy option given as a function, saying which may be', () => {
    const refused = refusal({ limit: 5, window: () => '1m' } as never)
    expect(refused.option).to.equal('window')
    expect(refused.message).to.match(
      /: of the policy options, only `limit`, `cost` and `concurrency` may be functions of the request\.$/,
    )
    expect(refusal({ limit: 5, window: '1m', name: () => 'x' } as never).option).to.equal('name')
  })

  it('refuses an unknown option name, and gives a peer’s familiar name ours', () => {
    expect(refusal({ limit: 5, window: '1m', nope: true } as never).option).to.equal('rateLimit.nope')
    const peer = refusal({ limit: 5, windowMs: 60_000 } as never)
    expect(peer.option).to.equal('rateLimit.windowMs')
    expect(peer.message).to.include('`window`')
  })
})
