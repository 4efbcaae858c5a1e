import { createRateLimiter, memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'
import fc from 'fast-check'
import { buildKey, decodeKeyPart, encodeKeyPart } from '../../../packages/core/src/limiter/keys.js'

describe('keys', () => {
  it('keeps plain ids readable and pins the tenant as the hash tag', () => {
    expect(buildKey('api', 'tenant-1')).to.equal('api:{tenant-1}')
    expect(buildKey('api', { tenant: '10.0.0.1', route: 'GET /users/:id' })).to.equal(
      'api:{10.0.0.1}:GET%20/users/%3Aid',
    )
  })

  it('never lets a value forge a separator, a hash tag or whitespace', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (value) => {
        const encoded = encodeKeyPart(value)
        expect(encoded).to.match(/^[A-Za-z0-9._~!$&'()*+,;=@/%-]+$/)
      }),
    )
  })

  it('is injective: distinct values never share an encoding', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (a, b) => {
        fc.pre(a !== b)
        expect(encodeKeyPart(a)).to.not.equal(encodeKeyPart(b))
      }),
    )
    const confusable = ['', '%e', '%25e', ':', '%3A', '{', '}', '\uD800', '\uFFFD', 'a'.repeat(129)]
    const encodings = new Set(confusable.map(encodeKeyPart))
    expect(encodings.size).to.equal(confusable.length)
  })

  it('bounds the size of a huge value and survives lone surrogates', () => {
    const huge = encodeKeyPart('x'.repeat(10_000_000))
    expect(huge.length).to.be.below(64)
    expect(huge.startsWith('%h')).to.equal(true)
    expect(encodeKeyPart('\uD800x')).to.equal('%uD800x')
  })

  it('keeps hostile tenants apart: no tenant consumes another tenant’s quota', async () => {
    const limiter = createRateLimiter({ store: memoryStore(), limit: 1, window: '1m' })
    const tenants = ['a', 'a:b', 'a}:{b', '{a}', 'a%3Ab', '', ' ', '🦀', '\uD800', 'x'.repeat(100_000)]
    for (const tenant of tenants) {
      expect((await limiter.consume(tenant)).allowed, JSON.stringify(tenant.slice(0, 20))).to.equal(true)
    }
    for (const tenant of tenants) expect((await limiter.consume(tenant)).allowed).to.equal(false)
    // A tenant with a route is a different window from the tenant alone.
    expect((await limiter.consume({ tenant: 'a', route: 'b' })).allowed).to.equal(true)
  })

  it('decodeKeyPart inverts encodeKeyPart, and refuses what it never makes', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 21 }), (value) => {
        expect(decodeKeyPart(encodeKeyPart(value))).to.equal(value)
      }),
    )
    expect(decodeKeyPart(encodeKeyPart('x'.repeat(200)))).to.equal(undefined)
    expect(decodeKeyPart('%zz')).to.equal(undefined)
  })
})
