import { isFleetlimitError } from '@fleetlimit/core'
import { expect } from 'chai'
import { createHolds, held } from '../../../../packages/core/src/store/memory/holds.js'
import type { WindowRequest, WindowResult } from '../../../../packages/core/src/store/store.js'
import { thrown } from '../../../support/thrown.js'

const result: WindowResult = { allowed: true, remaining: 4, retryAfterMs: 0, resetMs: 900, now: 100 }
const request = (key: string, blockMs?: number): WindowRequest => ({
  key,
  limit: 5,
  windowMs: 1_000,
  cost: 1,
  ...(blockMs === undefined ? {} : { blockMs }),
})

describe('memory store holds (store/memory/holds.ts)', () => {
  it('a key is held until its hold ends, exactly, and not after', () => {
    const holds = createHolds(10)
    expect(holds.heldUntil('k', 0)).to.equal(0)
    holds.holdKey('k', 500, 0)
    expect(holds.heldUntil('k', 499)).to.equal(500)
    expect(holds.heldUntil('k', 500)).to.equal(0)
    expect(holds.heldUntil('other', 0)).to.equal(0)
  })

  it('a longer hold in place stays; a shorter one is extended; end() ends it', () => {
    const holds = createHolds(10)
    holds.holdKey('k', 800, 0)
    holds.holdKey('k', 300, 0)
    expect(holds.heldUntil('k', 0)).to.equal(800)
    holds.holdKey('k', 900, 0)
    expect(holds.heldUntil('k', 0)).to.equal(900)
    holds.end('k')
    expect(holds.heldUntil('k', 0)).to.equal(0)
  })

  it('refuses a new held key past maxKeys with a StoreError, unless ended holds make room', () => {
    const holds = createHolds(2)
    holds.holdKey('a', 100, 0)
    holds.holdKey('b', 200, 0)
    const error = thrown(() => holds.holdKey('c', 300, 50))
    expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE'), String(error)).to.equal(true)
    expect((error as Error).message).to.equal(
      'fleetlimit: memory store full: it holds maxKeys (2) held keys; raise maxKeys or use redisStore',
    )
    // A held key is extended at the cap; at 100 the hold of 'a' has ended, so 'c' takes its room.
    holds.holdKey('b', 400, 50)
    holds.holdKey('c', 300, 100)
    expect([holds.heldUntil('a', 100), holds.heldUntil('b', 100), holds.heldUntil('c', 100)]).to.deep.equal([
      0, 400, 300,
    ])
  })

  it('dropEnded drops exactly the holds ended at that time', () => {
    const holds = createHolds(2)
    holds.holdKey('a', 100, 0)
    holds.holdKey('b', 200, 0)
    holds.dropEnded(100)
    // Read at an earlier time, a hold still in the map would answer: the ended one is gone, the other is not.
    expect([holds.heldUntil('a', 50), holds.heldUntil('b', 50)]).to.deep.equal([0, 200])
  })

  it('held: denied with the wait until the hold ends or the window’s own, whichever is later', () => {
    expect(held(result, 350.2, 100, true)).to.deep.equal({ ...result, allowed: false, remaining: 0, retryAfterMs: 251 })
    // A peek keeps the window's own room.
    expect(held({ ...result, retryAfterMs: 400 }, 300, 100, false)).to.deep.equal({
      ...result,
      allowed: false,
      remaining: 4,
      retryAfterMs: 400,
    })
  })

  it('blocked: a denial with blockMs holds its key for the block and waits at least that long; none without', () => {
    const holds = createHolds(10)
    const denied = { ...result, allowed: false, remaining: 0, retryAfterMs: 80 }
    expect(holds.blocked(request('k'), denied, 100)).to.equal(denied)
    expect(holds.heldUntil('k', 100)).to.equal(0)
    expect(holds.blocked(request('k', 500), denied, 100)).to.deep.equal({ ...denied, retryAfterMs: 500 })
    expect(holds.heldUntil('k', 599)).to.equal(600)
    expect(holds.heldUntil('k', 600)).to.equal(0)
  })
})
