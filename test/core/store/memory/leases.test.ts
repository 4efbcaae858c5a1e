import { expect } from 'chai'
import { createHolds } from '../../../../packages/core/src/store/memory/holds.js'
import { createKeyTable } from '../../../../packages/core/src/store/memory/key-table.js'
import { createLeases } from '../../../../packages/core/src/store/memory/leases.js'
import type { SlidingLog } from '../../../../packages/core/src/store/sliding-log.js'
import type { LeaseRequest } from '../../../../packages/core/src/store/store.js'

const request: LeaseRequest = { key: 'k', limit: 10, windowMs: 1_000, want: 4, min: 2, waitFor: 2, ttlMs: 300 }

function setUp() {
  let now = 1_000
  const table = createKeyTable(10)
  const holds = createHolds(10)
  const housekept: [number, number][] = []
  const leases = createLeases(table, holds, { housekeep: (at, adding) => void housekept.push([at, adding]) }, () => now)
  const logOf = () => table.entries.get('k')?.log as SlidingLog
  return { leases, holds, table, housekept, logOf, at: (ms: number) => (now = ms) }
}

describe('memory store leases (store/memory/leases.ts)', () => {
  it('grants up to want units, recorded at the lease expiry, after a slice of sweeping', () => {
    const { leases, housekept, logOf } = setUp()
    expect(leases.lease(request)).to.deep.equal({
      allowed: true,
      remaining: 6,
      retryAfterMs: 0,
      resetMs: 1_300,
      now: 1_000,
      lease: { windowMs: 1_000, score: 1_300, granted: 4, recorded: 1_300 },
    })
    expect(housekept).to.deep.equal([[1_000, 1]])
    expect(logOf().used(1_000, 1_000)).to.equal(4)
  })

  it('grants what is left when it is at least min, and denies below min with the wait for waitFor', () => {
    const { leases, at } = setUp()
    leases.lease({ ...request, want: 7 })
    expect(leases.lease(request)).to.include({ allowed: true, remaining: 0 })
    expect(leases.lease(request).lease.granted).to.equal(0)
    at(1_100)
    const denied = leases.lease(request)
    expect(denied).to.deep.equal({
      allowed: false,
      remaining: 0,
      retryAfterMs: 1_200,
      resetMs: 1_200,
      now: 1_100,
      lease: { windowMs: 1_000, score: 0, granted: 0, recorded: 0 },
    })
  })

  it('a held key is denied a lease until its hold ends', () => {
    const { leases, holds, table } = setUp()
    holds.holdKey('k', 1_500, 1_000)
    expect(leases.lease(request)).to.deep.equal({
      allowed: false,
      remaining: 0,
      retryAfterMs: 500,
      resetMs: 0,
      now: 1_000,
      lease: { windowMs: 1_000, score: 0, granted: 0, recorded: 0 },
    })
    // A denial on an empty key leaves no entry behind.
    expect(table.entries.has('k')).to.equal(false)
  })

  it('release returns the units named at the lease score, and nothing for a key of the other kind', () => {
    const { leases, table, logOf } = setUp()
    const { lease } = leases.lease(request)
    leases.release('k', lease, 3)
    expect(logOf().used(1_000, 1_000)).to.equal(1)
    leases.release('k', lease, 5)
    expect(logOf().used(1_000, 1_000)).to.equal(0)
    table.drop('k', table.entries.get('k') as never)
    table.entriesOf([{ key: 'k', limit: 10, windowMs: 1_000, cost: 1, slots: true }], true)
    expect(() => leases.release('k', lease, 1)).to.not.throw()
    leases.release('gone', lease, 1)
    expect(table.entries.has('gone')).to.equal(false)
  })
})
