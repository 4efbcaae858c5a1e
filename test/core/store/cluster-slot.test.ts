import { expect } from 'chai'
import { clusterSlot } from '../../../packages/core/src/store/cluster-slot.js'

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
})
