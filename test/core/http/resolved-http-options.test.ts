import { isFleetlimitError, memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'
import type { HttpRateLimitOptions } from '../../../packages/core/src/http/http-options.js'
import { resolveHttpOptions } from '../../../packages/core/src/http/resolved-http-options.js'

/** The option resolveHttpOptions refuses in `options`, and its message. */
function refusal(options: HttpRateLimitOptions<unknown>): { option: string; message: string } {
  try {
    resolveHttpOptions(options)
  } catch (error) {
    expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION'), String(error)).to.equal(true)
    return { option: (error as { option: string }).option, message: (error as Error).message }
  }
  return expect.fail('resolveHttpOptions was expected to throw')
}

describe('resolveHttpOptions (http/resolved-http-options.ts)', () => {
  it('fills the defaults into a frozen record', () => {
    const resolved = resolveHttpOptions({ store: memoryStore(), limit: 5, window: '1m', name: 'api' })
    expect(Object.isFrozen(resolved)).to.equal(true)
    expect(resolved).to.include({
      skipFailed: false,
      skipSuccessful: false,
      statusCode: 429,
      concurrencyStatusCode: 429,
      ipv6Subnet: 56,
      logger: console,
      maxCost: 5,
      unlimited: undefined,
      ownInFlight: undefined,
      rateName: undefined,
    })
    expect([...resolved.inFlight]).to.deep.equal([])
    expect(resolved.headerOptions).to.deep.equal({
      standard: 'draft-8',
      legacy: false,
      windows: new Map([['api', 60_000]]),
    })
  })

  it('keeps the options given, and functions of the request apart from the policy', () => {
    const limit = () => 7
    const cost = () => 2
    const resolved = resolveHttpOptions({
      store: memoryStore(),
      limit,
      cost,
      window: '1m',
      concurrency: 2,
      statusCode: 503,
      headers: false,
      legacyHeaders: true,
      skipFailedRequests: true,
    })
    expect(resolved).to.include({
      limitOf: limit,
      costOf: cost,
      statusCode: 503,
      concurrencyStatusCode: 503,
      skipFailed: true,
    })
    expect([...resolved.inFlight]).to.deep.equal([resolved.ownInFlight])
    expect(resolved.rateName).to.equal('plan-per-60000ms')
    expect(resolved.headerOptions.standard).to.equal(false)
    expect(resolved.headerOptions.legacy).to.equal(true)
  })

  it('maxCost is the smallest rate limit; only in-flight policies leave it at the ceiling', () => {
    expect(resolveHttpOptions({ store: memoryStore(), concurrency: 3 }).maxCost).to.equal(1_000_000_000)
  })

  it('refuses each bad option, naming it', () => {
    const base = { store: memoryStore(), limit: 5, window: '1m' } as const
    expect(refusal({ ...base, statusCode: 200 }).option).to.equal('statusCode')
    expect(refusal({ ...base, concurrencyStatusCode: 600 }).option).to.equal('concurrencyStatusCode')
    expect(refusal({ ...base, ipv6Subnet: 0 }).option).to.equal('ipv6Subnet')
    expect(refusal({ ...base, headers: 'draft-9' as never }).option).to.equal('headers')
    expect(refusal({ ...base, legacyHeaders: 'yes' as never }).option).to.equal('legacyHeaders')
    expect(refusal({ ...base, skipFailedRequests: 1 as never }).option).to.equal('skipFailedRequests')
    expect(refusal({ ...base, tenant: 'ip' as never }).option).to.equal('tenant')
    expect(refusal({ ...base, message: null as never })).to.deep.equal({
      option: 'message',
      message:
        'fleetlimit: invalid option `message`: got null; expected a string, an object or a function of (req, decision).',
    })
    expect(refusal({ ...base, logger: {} as never }).option).to.equal('logger')
    expect(refusal({ ...base, requestWasSuccessful: true as never }).option).to.equal('requestWasSuccessful')
  })
})
