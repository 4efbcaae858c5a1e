import {
  createHttpLimiter,
  type Decision,
  definePolicy,
  ipTenant,
  isFleetlimitError,
  memoryStore,
  type OptionError,
  rateLimitHeaders,
} from '@fleetlimit/core'
import { expect } from 'chai'

const framework = { name: 'Test', trustProxyHint: 'Trust it' }

describe('ipTenant', () => {
  it('keeps IPv4, maps IPv4-mapped IPv6 to IPv4, and groups IPv6 by prefix', () => {
    expect(ipTenant('203.0.113.9')).to.equal('203.0.113.9')
    expect(ipTenant('::ffff:203.0.113.9')).to.equal('203.0.113.9')
    expect(ipTenant('::ffff:cb00:7109')).to.equal('203.0.113.9')
    expect(ipTenant('2001:db8:abcd:12ff::1')).to.equal('2001:db8:abcd:1200:0:0:0:0/56')
    expect(ipTenant('2001:db8:abcd:1234:5678::1', 64)).to.equal('2001:db8:abcd:1234:0:0:0:0/64')
    expect(ipTenant('2001:db8::1', 128)).to.equal('2001:db8:0:0:0:0:0:1/128')
    expect(ipTenant('fe80::1%eth0', 16)).to.equal('fe80:0:0:0:0:0:0:0/16')
    expect(ipTenant('64:ff9b::192.0.2.33', 128)).to.equal('64:ff9b:0:0:0:0:c000:221/128')
  })

  it('puts a missing address in one bucket and keeps a non-address as it is', () => {
    expect(ipTenant(undefined)).to.equal('unknown-ip')
    expect(ipTenant('')).to.equal('unknown-ip')
    expect(ipTenant('not-an-ip')).to.equal('not-an-ip')
  })
})

describe('rateLimitHeaders', () => {
  const decision: Decision = {
    allowed: false,
    limit: 10,
    remaining: 0,
    retryAfterMs: 1_001,
    resetMs: 9_500,
    source: 'store',
    policy: 'api',
  }
  const windows = new Map([['api', 60_000]])

  it('rounds Retry-After up to whole seconds, never below 1', () => {
    expect(rateLimitHeaders(decision, { standard: false, legacy: false, windows })).to.deep.equal({
      'retry-after': '2',
    })
    const tiny = { ...decision, retryAfterMs: 1 }
    expect(rateLimitHeaders(tiny, { standard: false, legacy: false, windows })['retry-after']).to.equal('1')
  })

  it('invents no numbers for a decision made failing open unlimited', () => {
    const open: Decision = { ...decision, allowed: true, retryAfterMs: 0, source: 'open' }
    expect(rateLimitHeaders(open, { standard: 'draft-8', legacy: true, windows })).to.deep.equal({})
  })
})

describe('adapter options are validated at construction', () => {
  const cases: [object, string][] = [
    [{ limit: 5, window: '1s', headers: 'draft-9' }, 'headers'],
    [{ limit: 5, window: '1s', statusCode: 200 }, 'statusCode'],
    [{ limit: 5, window: '1s', ipv6Subnet: 0 }, 'ipv6Subnet'],
    [{ limit: 5, window: '1s', legacyHeaders: 'yes' }, 'legacyHeaders'],
    [{ limit: 5, window: '1s', tenant: 'ip' }, 'tenant'],
    [{ limit: 5, window: '1s', skip: true }, 'skip'],
    [{ limit: 5, window: '1s', message: null }, 'message'],
    [{ limit: 5, window: '1s', logger: {} }, 'logger'],
    [{ limit: 5, window: '1s', keyGenerator: () => 'x' }, 'rateLimit.keyGenerator'],
    [{ limit: 5, window: '1s', policy: definePolicy({ limit: 1, window: '1s' }) }, 'policy + limit, window'],
    [{ store: memoryStore() }, 'limit'],
    [{ limiter: {} }, 'limiter'],
  ]
  for (const [options, option] of cases) {
    it(`rejects ${option}`, () => {
      let error: unknown
      try {
        createHttpLimiter(options as never, framework)
      } catch (e) {
        error = e
      }
      expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION'), String(error)).to.equal(true)
      expect((error as OptionError).option).to.equal(option)
    })
  }
})
