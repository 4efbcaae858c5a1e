import { expect } from 'chai'
import type { RequestInfo } from '../../../packages/core/src/http/adapter-contract.js'
import {
  checkTenantIpv6,
  createAddressWarnings,
  createWarnOnce,
  shown,
} from '../../../packages/core/src/http/config-warnings.js'

/** A logger that keeps its warnings, and warnOnce over it. */
function logged() {
  const lines: string[] = []
  const warnOnce = createWarnOnce({ warn: (line: string) => void lines.push(line) }, new Set())
  return { lines, warnOnce }
}

const info = (fields: Partial<RequestInfo>): RequestInfo => ({
  ip: '10.0.0.1',
  method: 'GET',
  routePattern: '/',
  forwardedFor: false,
  trustProxy: 'none',
  peerAddress: '10.0.0.1',
  ...fields,
})

describe('config warnings (http/config-warnings.ts)', () => {
  it('shown quotes and escapes a value, cut at 64 characters', () => {
    expect(shown('a"b\nc')).to.equal('"a\\"b\\nc"')
    expect(shown('x'.repeat(70))).to.equal(`"${'x'.repeat(64)}…"`)
  })

  it('warnOnce says each kind once, makes the message only then, and survives a logger that throws', () => {
    const { lines, warnOnce } = logged()
    let made = 0
    const message = () => `m${++made}`
    warnOnce('a', message)
    warnOnce('a', message)
    warnOnce('b', message)
    expect(lines).to.deep.equal(['fleetlimit: m1', 'fleetlimit: m2'])
    expect(made).to.equal(2)
    const throwing = createWarnOnce(
      {
        warn: () => {
          throw new Error('logger down')
        },
      },
      new Set(),
    )
    expect(() => throwing('a', () => 'x')).to.not.throw()
  })

  it('warns of a proxy trusted for all, of X-Forwarded-For not trusted, and from an untrusted peer', () => {
    const { lines, warnOnce } = logged()
    const warnings = createAddressWarnings({ name: 'Koa', trustProxyHint: 'set app.proxy = true' }, warnOnce)
    warnings.checkProxy(info({ forwardedFor: false, trustProxy: 'none' }))
    expect(lines).to.deep.equal([])
    warnings.checkProxy(info({ forwardedFor: true, trustProxy: 'none' }))
    expect(lines).to.deep.equal([
      'fleetlimit: a request carries X-Forwarded-For but Koa does not trust a proxy, so every client behind the ' +
        'proxy shares one limit. set app.proxy = true, or pass tenant(req).',
    ])
    warnings.checkProxy(info({ forwardedFor: true, trustProxy: 'some', ip: '10.0.0.9', peerAddress: '10.0.0.9' }))
    expect(lines[1]).to.equal(
      'fleetlimit: a request carries X-Forwarded-For from "10.0.0.9", which Koa does not trust as a proxy, so that ' +
        'address is the client. If it is your proxy, every client behind it shares one limit. set app.proxy = true, ' +
        'or pass tenant(req).',
    )
    warnings.checkProxy(info({ trustProxy: 'all' }))
    expect(lines[2]).to.match(
      /^fleetlimit: Koa trusts X-Forwarded-For from any peer, .* own address and escape its limit\. /,
    )
    expect(lines[2]).to.include("pass tenant(req) that returns ipTenant(address) from '@fleetlimit/core/http'")
    expect(lines).to.have.length(3)
  })

  it('warns once of a client address that is not an IP', () => {
    const { lines, warnOnce } = logged()
    const warnings = createAddressWarnings({ name: 'Express' }, warnOnce)
    warnings.notAnIp('unix:/tmp/s')
    warnings.notAnIp('other')
    expect(lines).to.have.length(1)
    expect(lines[0]).to.match(/^fleetlimit: the client address "unix:\/tmp\/s" that Express reports is not an IP/)
  })

  it('warns of a bare IPv6 tenant, not of an IPv4-mapped one or a key with a colon', () => {
    const { lines, warnOnce } = logged()
    for (const tenant of ['api-key', 'user:1', '::ffff:10.0.0.1', '10.0.0.1']) checkTenantIpv6(tenant, warnOnce)
    expect(lines).to.deep.equal([])
    checkTenantIpv6('2001:db8::1', warnOnce)
    expect(lines).to.have.length(1)
    expect(lines[0]).to.match(/^fleetlimit: tenant\(req\) returned the IPv6 address "2001:db8::1" as it is/)
  })
})
