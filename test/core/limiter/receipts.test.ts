import { expect } from 'chai'
import { definePolicy } from '../../../packages/core/src/limiter/policy.js'
import { leaseReceipt, Receipted, refundRequestOf, WindowReceipt } from '../../../packages/core/src/limiter/receipts.js'
import { admittedDecision } from '../../support/decisions.js'

const decision = () => admittedDecision('api')

describe('receipts', () => {
  it('Receipted stamps the decision object itself, unseen by keys, spread and JSON; only its owner reads it', () => {
    const owner = {}
    const plain = decision()
    const stamped = new Receipted(plain, { id: 'r1' }, owner)
    expect(stamped).to.equal(plain)
    expect(Receipted.has(plain)).to.equal(true)
    expect(Receipted.of(plain, owner)).to.deep.equal({ id: 'r1' })
    expect(Receipted.of(plain, {})).to.equal(undefined)
    expect(Object.keys(plain)).to.deep.equal([
      'allowed',
      'limit',
      'remaining',
      'retryAfterMs',
      'resetMs',
      'source',
      'policy',
    ])
    expect(JSON.parse(JSON.stringify(plain))).to.deep.equal(decision())
    const copy = { ...plain }
    expect(Receipted.has(copy)).to.equal(false)
    expect(Receipted.of(Object.create(plain), owner)).to.equal(undefined)
    expect(Receipted.of(null, owner)).to.equal(undefined)
    expect(Receipted.of('decision', owner)).to.equal(undefined)
  })

  it('refundRequestOf names the window, its length, the instant recorded, and a bucketed policy’s buckets', () => {
    const log = definePolicy({ name: 'api', limit: 5, window: '1s' })
    expect(refundRequestOf({ policy: log, key: 'k', limit: 5 }, 1_234)).to.deep.equal({
      key: 'k',
      windowMs: 1_000,
      recorded: 1_234,
    })
    const bucketed = definePolicy({ name: 'day', limit: 5, window: '1d', algorithm: 'bucketed', buckets: 24 })
    expect(refundRequestOf({ policy: bucketed, key: 'k', limit: 5 }, 7)).to.deep.equal({
      key: 'k',
      windowMs: 86_400_000,
      recorded: 7,
      buckets: 24,
    })
  })

  it('WindowReceipt builds its refund request when asked; leaseReceipt returns units to the lease’s entry', () => {
    const policy = definePolicy({ name: 'api', limit: 5, window: '1s' })
    const receipt = new WindowReceipt('id-1', 3, { policy, key: 'k', limit: 4 }, 99)
    expect(receipt).to.include({ id: 'id-1', units: 3 })
    expect(receipt.requests).to.deep.equal([{ key: 'k', windowMs: 1_000, recorded: 99 }])
    expect(receipt.names).to.deep.equal(['api'])
    expect(receipt.limits).to.deep.equal([4])
    const lease = { windowMs: 1_000, recorded: 50 } as Parameters<typeof leaseReceipt>[2]
    expect(leaseReceipt('id-2', 'k', lease, 2)).to.deep.equal({
      id: 'id-2',
      requests: [{ key: 'k', windowMs: 1_000, recorded: 50 }],
      units: 2,
    })
  })
})
