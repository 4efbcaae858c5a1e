import { expect } from 'chai'
import fc from 'fast-check'
import { clusterSlot } from '../../../packages/core/src/store/cluster-slot.js'

/** The specification's CRC16 (XMODEM), a bit at a time over the hash tag's UTF-8 bytes: the model. */
function modelSlot(key: string): number {
  const open = key.indexOf('{')
  const close = open === -1 ? -1 : key.indexOf('}', open + 1)
  const hashed = close > open + 1 ? key.slice(open + 1, close) : key
  let crc = 0
  for (const byte of Buffer.from(hashed)) {
    crc ^= byte << 8
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
  }
  return crc % 16_384
}

describe('clusterSlot', () => {
  it('is CRC16 (XMODEM) of the key modulo 16384, as CLUSTER KEYSLOT answers', () => {
    // The check value of CRC16/XMODEM is 0x31C3 for "123456789" (the Redis Cluster specification's example).
    expect(clusterSlot('123456789')).to.equal(0x31c3 % 16_384)
    expect(clusterSlot('foo')).to.equal(12_182)
    expect(clusterSlot('')).to.equal(0)
  })

  it('hashes only the first non-empty hash tag', () => {
    expect(clusterSlot('fleetlimit:api:{tenant-1}:GET /a')).to.equal(clusterSlot('tenant-1'))
    expect(clusterSlot('{user1000}.following')).to.equal(clusterSlot('{user1000}.followers'))
    expect(clusterSlot('foo{}{bar}')).to.not.equal(clusterSlot('bar'))
    expect(clusterSlot('foo{{bar}}zap')).to.equal(clusterSlot('{bar'))
    expect(clusterSlot('foo{bar}{zap}')).to.equal(clusterSlot('bar'))
    expect(clusterSlot('no-close{tag')).to.not.equal(clusterSlot('tag'))
  })

  it('hashes the UTF-8 bytes of the key', () => {
    expect(clusterSlot('{é}')).to.equal(clusterSlot('é'))
    expect(clusterSlot('é')).to.not.equal(clusterSlot('e'))
  })

  it('equals the bit-at-a-time model for any key: ASCII or not, tags or braces anywhere, lone surrogates', () => {
    const part = fc.oneof(
      fc.string({ unit: 'grapheme-ascii' }),
      fc.string({ unit: 'binary' }),
      fc.constantFrom('{', '}', '{}', 'é', '\ud800', 'fleetlimit:global~sl3-60000:'),
    )
    fc.assert(
      fc.property(fc.array(part, { maxLength: 6 }), (parts) => {
        const key = parts.join('')
        expect(clusterSlot(key), JSON.stringify(key)).to.equal(modelSlot(key))
      }),
      { numRuns: 5_000 },
    )
  })
})
