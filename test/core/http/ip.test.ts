import { ipTenant } from '@fleetlimit/core/http'
import { expect } from 'chai'
import fc from 'fast-check'

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

describe('ipTenant: addresses with ports and brackets', () => {
  it('drops the port of an IPv4 address, as some gateways send it in X-Forwarded-For', () => {
    expect(ipTenant('1.2.3.4:5678')).to.equal('1.2.3.4')
    expect(ipTenant('1.2.3.4:1')).to.equal('1.2.3.4')
    expect(ipTenant(' 1.2.3.4:80 ')).to.equal('1.2.3.4')
  })

  it('drops the brackets and port of an IPv6 address, then groups it as any IPv6', () => {
    expect(ipTenant('[2001:db8::1]:443')).to.equal(ipTenant('2001:db8::1'))
    expect(ipTenant('[2001:db8::1]')).to.equal('2001:db8:0:0:0:0:0:0/56')
    expect(ipTenant('[2001:DB8::1]:8080', 128)).to.equal('2001:db8:0:0:0:0:0:1/128')
    expect(ipTenant('[fe80::1%eth0]:22', 16)).to.equal('fe80:0:0:0:0:0:0:0/16')
  })

  it('maps IPv4-mapped IPv6 with a port to the IPv4 address', () => {
    expect(ipTenant('[::ffff:1.2.3.4]:443')).to.equal('1.2.3.4')
    expect(ipTenant('::ffff:1.2.3.4:443')).to.equal('1.2.3.4')
    expect(ipTenant('[1.2.3.4]:80')).to.equal('1.2.3.4')
  })

  it('reads an unbracketed IPv6 ending in a number as the address it is, not as a port', () => {
    expect(ipTenant('2001:db8::1:443', 128)).to.equal('2001:db8:0:0:0:0:1:443/128')
  })

  it('keeps a value that is still not an address as it is', () => {
    for (const value of ['not-an-ip', '1.2.3.4:port', '1.2.3.4:123456', '[2001:db8::1', '2001:db8::1]:80', '[]:80']) {
      expect(ipTenant(value), value).to.equal(value)
    }
    const long = `${'1'.repeat(200)}:80`
    expect(ipTenant(long)).to.equal(long)
  })

  it('never throws, whatever the text, huge values included', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (text) => {
        expect(ipTenant(text)).to.be.a('string')
      }),
    )
    const hostile = `[${':'.repeat(50_000)}]:${'1.'.repeat(50_000)}`
    expect(ipTenant(hostile)).to.equal(hostile)
  })
})
