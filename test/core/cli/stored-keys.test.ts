import { expect } from 'chai'
import fc from 'fast-check'
import { globLiteral, parseStoredKey } from '../../../packages/core/src/cli/stored-keys.js'
import { buildKey, encodeKeyPart } from '../../../packages/core/src/limiter/keys.js'
import { definePolicy, policyKeyName } from '../../../packages/core/src/limiter/policy.js'

describe('cli/stored-keys: parseStoredKey', () => {
  it('reads back every key a limiter builds, tenant and route decoded', () => {
    const policies = [
      definePolicy({ name: 'api', limit: 5, window: '1m' }),
      definePolicy({ name: 'b.x-1', limit: 5, window: 1500, algorithm: 'bucketed', buckets: 10 }),
      definePolicy({ name: 'par', concurrency: 3, slotTtlMs: 30_000 }),
    ]
    fc.assert(
      fc.property(
        fc.constantFrom(...policies),
        fc.string({ unit: 'binary' }),
        fc.option(fc.string({ unit: 'binary' }), { nil: undefined }),
        (policy, tenant, route) => {
          const key = buildKey(policyKeyName(policy), route === undefined ? tenant : { tenant, route })
          const stored = parseStoredKey(`pre:${key}`, 'pre')
          const { name, window, algorithm } = policy
          expect(stored?.policy).to.deep.equal({
            name,
            window,
            algorithm,
            ...(policy.buckets !== undefined && { buckets: policy.buckets }),
            ...(policy.concurrency !== undefined && { inFlight: true }),
          })
          expect(stored?.key).to.equal(key)
          expect(stored?.tenant).to.equal(encodeKeyPart(tenant).startsWith('%h') ? undefined : tenant)
          expect(stored?.hasRoute).to.equal(route !== undefined)
          if (route !== undefined)
            expect(stored?.route).to.equal(encodeKeyPart(route).startsWith('%h') ? undefined : route)
        },
      ),
    )
  })

  it('skips keys that are no window: a refund marker, a priority class’s share, another prefix, another app', () => {
    expect(parseStoredKey('pre:api~sl3-60000:{a}:GET%20/x:refund:abc', 'pre')).to.equal(undefined)
    expect(parseStoredKey('pre:api~sl3-60000~p-batch:{a}:GET%20/x', 'pre')).to.equal(undefined)
    expect(parseStoredKey('other:api~sl3-60000:{a}', 'pre')).to.equal(undefined)
    expect(parseStoredKey('pre:session:123', 'pre')).to.equal(undefined)
  })
})

describe('cli/stored-keys: globLiteral', () => {
  it('escapes what SCAN MATCH reads as a pattern, and nothing else', () => {
    expect(globLiteral('a*b?c[d]e\\f')).to.equal('a\\*b\\?c\\[d\\]e\\\\f')
    expect(globLiteral('fleetlimit:{t}:GET /x')).to.equal('fleetlimit:{t}:GET /x')
  })
})
