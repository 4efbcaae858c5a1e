import { expect } from 'chai'
import { type MemoryStore, memoryStore } from '../../../packages/core/src/store/memory-store.js'
import { MAX_REFUND_TAIL } from '../../../packages/core/src/store/sliding-log.js'
import type { WindowRequest, WindowResult } from '../../../packages/core/src/store/store.js'

/** An in-flight window of `limit` slots, each held `ttlMs` unless freed. */
const slots = (key: string, limit: number, ttlMs: number, extra: Partial<WindowRequest> = {}): WindowRequest => ({
  key,
  limit,
  windowMs: ttlMs,
  cost: 1,
  slots: true,
  ...extra,
})
const rate = (key: string, limit: number, windowMs: number, cost: number, extra: Partial<WindowRequest> = {}) => ({
  key,
  limit,
  windowMs,
  cost,
  ...extra,
})
const fields = ({ allowed, remaining, retryAfterMs, resetMs }: WindowResult) => ({
  allowed,
  remaining,
  retryAfterMs,
  resetMs,
})

describe('memoryStore in-flight slots (injected clock)', () => {
  let now: number
  let store: MemoryStore
  beforeEach(() => {
    now = 1_000_000
    store = memoryStore({ clock: () => now })
  })
  const take = async (request: WindowRequest) => (await store.consume([request]))[0] as WindowResult

  it('admits up to the limit, then denies with the exact wait until the soonest slot ends', async () => {
    const a = await take(slots('k', 2, 1_000))
    expect(a).to.deep.equal({ allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 1_000, now, recorded: now })
    now += 300.5
    const b = await take(slots('k', 2, 1_000))
    expect(b).to.deep.equal({ allowed: true, remaining: 0, retryAfterMs: 0, resetMs: 1_000, now, recorded: now })
    now += 100
    // a ends at 1 001 000, 599.5 ms from now (rounded up); b at 1 001 300.5.
    expect(await take(slots('k', 2, 1_000))).to.deep.equal({
      allowed: false,
      remaining: 0,
      retryAfterMs: 600,
      resetMs: 900,
      now,
    })
    expect(fields((await store.peek([slots('k', 2, 1_000)]))[0] as WindowResult)).to.deep.equal({
      allowed: false,
      remaining: 0,
      retryAfterMs: 600,
      resetMs: 900,
    })
    now = 1_001_000
    expect(fields(await take(slots('k', 2, 1_000)))).to.deep.equal({
      allowed: true,
      remaining: 0,
      retryAfterMs: 0,
      resetMs: 1_000,
    })
  })

  it('gives unique increasing ids, also for slots taken at one instant and after the clock stepped back', async () => {
    const ids = [await take(slots('k', 5, 1_000)), await take(slots('j', 5, 1_000))]
    now -= 10
    ids.push(await take(slots('k', 5, 1_000)))
    expect(ids.map((r) => r.recorded)).to.deep.equal([1_000_000, 1_000_001, 1_000_002])
  })

  it('a peek takes no slot, and an unknown key leaves no entry', async () => {
    expect(fields((await store.peek([slots('k', 2, 1_000)]))[0] as WindowResult)).to.deep.equal({
      allowed: true,
      remaining: 2,
      retryAfterMs: 0,
      resetMs: 0,
    })
    expect(store.size).to.equal(0)
    await take(slots('k', 2, 1_000))
    expect((await store.peek([slots('k', 2, 1_000)]))[0]).to.include({ remaining: 1, resetMs: 1_000 })
  })

  it('frees a slot once; a forged id, another key’s id or an ended slot frees nothing', async () => {
    const a = (await take(slots('k', 1, 1_000))).recorded as number
    expect(await store.free([{ key: 'k', slot: a + 1 }])).to.equal(0)
    expect(await store.free([{ key: 'other', slot: a }])).to.equal(0)
    expect(await store.free([{ key: 'k', slot: a }])).to.equal(1)
    expect(await store.free([{ key: 'k', slot: a }])).to.equal(0)
    const b = (await take(slots('k', 1, 1_000))).recorded as number
    now += 1_000
    expect(await store.free([{ key: 'k', slot: b }]), 'a slot that ended').to.equal(0)
    expect((await take(slots('k', 1, 1_000))).allowed).to.equal(true)
  })

  it('frees several slots in one call and counts each one held', async () => {
    const ids = [await take(slots('k', 3, 1_000)), await take(slots('k', 3, 1_000)), await take(slots('j', 1, 1_000))]
    const [a, b, c] = ids.map((r) => r.recorded as number) as [number, number, number]
    const freed = [
      { key: 'k', slot: a },
      { key: 'k', slot: a },
      { key: 'k', slot: b },
      { key: 'j', slot: c },
    ]
    expect(await store.free(freed)).to.equal(3)
    expect((await store.peek([slots('k', 3, 1_000)]))[0]?.remaining).to.equal(3)
  })

  it('extends a held slot to now + ms, keeps a later end, and extends no freed or ended slot', async () => {
    const a = (await take(slots('k', 1, 1_000))).recorded as number
    now += 500
    expect(await store.extend([{ key: 'k', slot: a }], 2_000)).to.equal(1)
    expect(fields(await take(slots('k', 1, 1_000)))).to.deep.equal({
      allowed: false,
      remaining: 0,
      retryAfterMs: 2_000,
      resetMs: 2_000,
    })
    expect(await store.extend([{ key: 'k', slot: a }], 10), 'a shorter extend keeps the end').to.equal(1)
    expect((await store.peek([slots('k', 1, 1_000)]))[0]?.retryAfterMs).to.equal(2_000)
    now += 2_000
    expect(await store.extend([{ key: 'k', slot: a }], 5_000), 'ended').to.equal(0)
    const b = (await take(slots('k', 1, 1_000))).recorded as number
    await store.free([{ key: 'k', slot: b }])
    expect(await store.extend([{ key: 'k', slot: b }], 5_000), 'freed').to.equal(0)
    expect((await take(slots('k', 1, 1_000))).allowed).to.equal(true)
  })

  it('admits a call of rate windows of different costs and a slot window only if all have room, counted only then', async () => {
    const call = (tokens: number) => [
      rate('rpm', 10, 60_000, 1),
      rate('tpm', 1_000, 60_000, tokens),
      slots('par', 2, 5_000),
    ]
    const first = await store.consume(call(600))
    expect(first.map(fields)).to.deep.equal([
      { allowed: true, remaining: 9, retryAfterMs: 0, resetMs: 60_000 },
      { allowed: true, remaining: 400, retryAfterMs: 0, resetMs: 60_000 },
      { allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 5_000 },
    ])
    expect(first.map((r) => r.recorded)).to.deep.equal([now, now, now])
    now += 10
    // The tokens do not fit: nothing is counted, no slot taken.
    const denied = await store.consume(call(401))
    expect(denied.map(fields)).to.deep.equal([
      { allowed: true, remaining: 9, retryAfterMs: 0, resetMs: 59_990 },
      { allowed: false, remaining: 400, retryAfterMs: 59_990, resetMs: 59_990 },
      { allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 4_990 },
    ])
    expect(denied.map((r) => r.recorded)).to.deep.equal([undefined, undefined, undefined])
    expect((await store.consume(call(400))).map((r) => r.remaining)).to.deep.equal([8, 0, 0])
    // Now the slots are full: a call the rate windows have room for is denied by the slot window alone.
    const full = await store.consume([rate('rpm', 10, 60_000, 1), slots('par', 2, 5_000)])
    expect(full.map((r) => [r.allowed, r.remaining, r.retryAfterMs])).to.deep.equal([
      [true, 8, 0],
      [false, 0, 4_990],
    ])
    expect((await store.peek([rate('rpm', 10, 60_000, 1)]))[0]?.remaining).to.equal(8)
  })

  it('a shadow slot window reports but does not decide; it takes a slot only when it has room', async () => {
    const call = () => [rate('rpm', 10, 60_000, 1), slots('par', 1, 5_000, { shadow: true })]
    const [a, b] = [await store.consume(call()), await store.consume(call())]
    expect(a.map((r) => [r.allowed, r.remaining, r.recorded])).to.deep.equal([
      [true, 9, now],
      [true, 0, now],
    ])
    expect(b.map((r) => [r.allowed, r.remaining, r.recorded])).to.deep.equal([
      [true, 8, now],
      [false, 0, undefined],
    ])
  })

  it('a slot key asked as a rate window, or the reverse (free, settle), fails that call alone and changes nothing', async () => {
    await take(slots('par', 2, 1_000))
    await take(rate('rpm', 5, 1_000, 1) as WindowRequest)
    const both = [rate('rpm', 5, 1_000, 1), rate('par', 5, 1_000, 1)]
    const error = await store.consume(both).catch((e: unknown) => e)
    expect((error as Error).message).to.match(/key "par" holds an in-flight window/)
    const reverse = await store.consume([slots('rpm', 2, 1_000)]).catch((e: unknown) => e)
    expect((reverse as Error).message).to.match(/key "rpm" holds a sliding-log window/)
    const freeing = await store.free([{ key: 'rpm', slot: now }]).catch((e: unknown) => e)
    expect((freeing as Error).message).to.match(/key "rpm" holds a sliding-log window/)
    const settling = await store
      .settle([{ key: 'par', windowMs: 1_000, recorded: now, delta: 1 }], 'id')
      .catch((e: unknown) => e)
    expect((settling as Error).message).to.match(/key "par" holds an in-flight window/)
    expect((await store.peek([rate('rpm', 5, 1_000, 1)]))[0]?.remaining).to.equal(4)
    expect((await store.peek([slots('par', 2, 1_000)]))[0]?.remaining).to.equal(1)
  })

  it('a slot key with no live slot is swept; a reset frees every slot', async () => {
    await take(slots('a', 2, 1_000))
    await take(slots('b', 2, 1_000))
    await store.reset('b')
    expect((await store.peek([slots('b', 2, 1_000)]))[0]?.remaining).to.equal(2)
    now += 1_000
    expect(store.sweep()).to.equal(1)
    expect(store.size).to.equal(0)
  })

  it('decideNow answers a plan of a slot window, and of mixed costs, as consume does', async () => {
    const slot = store.plan([slots('par', 1, 1_000)])
    expect(store.decideNow(slot)[0]).to.include({ allowed: true, recorded: now })
    expect(store.decideNow(slot)[0]?.allowed).to.equal(false)
    const mixed = store.decideNow(store.plan([rate('rpm', 10, 1_000, 1), rate('tpm', 100, 1_000, 60)]))
    expect(mixed.map((r) => r.remaining)).to.deep.equal([9, 40])
  })

  it('onSlotFree listeners hear each freed key after free() returns, and nothing when nothing was freed', async () => {
    const heard: (readonly string[] | undefined)[] = []
    const listener = (keys: readonly string[] | undefined) => heard.push(keys)
    store.onSlotFree(listener)
    const a = (await take(slots('k', 2, 1_000))).recorded as number
    const b = (await take(slots('k', 2, 1_000))).recorded as number
    const c = (await take(slots('j', 2, 1_000))).recorded as number
    const freed = store.free([
      { key: 'k', slot: a },
      { key: 'k', slot: b },
      { key: 'j', slot: c },
    ])
    expect(heard, 'never inside free()').to.deep.equal([])
    expect(await freed).to.equal(3)
    await store.free([{ key: 'k', slot: a }])
    // The microtask queued by the first free has run by the time the second one's promise settles.
    expect(heard).to.deep.equal([['k', 'j']])
  })
})

describe('memoryStore settle (injected clock)', () => {
  let now: number
  let store: MemoryStore
  beforeEach(() => {
    now = 1_000_000
    store = memoryStore({ clock: () => now })
  })
  const tpm = (cost: number) => rate('tpm', 1_000, 60_000, cost)
  const rpm = rate('rpm', 10, 60_000, 1)
  const admit = async (tokens: number) => {
    const [r, t] = await store.consume([rpm, tpm(tokens)])
    return [
      { key: 'rpm', windowMs: 60_000, recorded: r?.recorded as number },
      { key: 'tpm', windowMs: 60_000, recorded: t?.recorded as number },
    ] as const
  }
  const remaining = async () => (await store.peek([rpm, tpm(1)])).map((r) => r.remaining)

  it('settles up at the entry’s time: the extra leaves the window when the admission does, past the limit', async () => {
    const [r, t] = await admit(500)
    now += 10_000
    await admit(100)
    const result = await store.settle(
      [
        { ...r, delta: 0 },
        { ...t, delta: 700 },
      ],
      'id-1',
    )
    expect(result).to.deep.equal({ outcome: 'settled', used: [2, 1_300] })
    expect(await remaining()).to.deep.equal([8, 0])
    // The first admission's 1 200 tokens leave with it, at 60 s from it, not from the settle.
    now = 1_060_000
    expect(await remaining()).to.deep.equal([9, 900])
  })

  it('settles down, giving back at most the units the entry holds', async () => {
    const [r, t] = await admit(500)
    now += 1
    await admit(100)
    expect(
      await store.settle(
        [
          { ...r, delta: -1 },
          { ...t, delta: -380 },
        ],
        'a',
      ),
    ).to.deep.equal({
      outcome: 'settled',
      used: [1, 220],
    })
    now += 1
    const [, t2] = await admit(50)
    // 50 tokens at that entry: a give-back of 80 takes those 50 and no other admission's.
    expect(await store.settle([{ ...t2, delta: -80 }], 'b')).to.deep.equal({ outcome: 'settled', used: [220] })
    expect(await remaining()).to.deep.equal([8, 780])
  })

  it('applies an id once: the same settle sent again changes nothing and says so, with the windows’ use now', async () => {
    const [, t] = await admit(500)
    expect(await store.settle([{ ...t, delta: 100 }], 'same')).to.deep.equal({ outcome: 'settled', used: [600] })
    expect(await store.settle([{ ...t, delta: 100 }], 'same')).to.deep.equal({
      outcome: 'already-settled',
      used: [600],
    })
    expect(await store.settle([{ ...t, delta: 100 }], 'other')).to.deep.equal({ outcome: 'settled', used: [700] })
  })

  it('an entry no window holds any more is expired: nothing changed, no marker set', async () => {
    const [, t] = await admit(500)
    now += 60_000
    expect(await store.settle([{ ...t, delta: 100 }], 'late')).to.deep.equal({ outcome: 'expired', used: [0] })
    const [, fresh] = await admit(10)
    expect(await store.settle([{ ...fresh, delta: 5 }], 'late')).to.deep.equal({ outcome: 'settled', used: [15] })
    // An id, or a key, that never held the entry.
    expect(await store.settle([{ ...fresh, key: 'nope', delta: 5 }], 'x')).to.deep.equal({
      outcome: 'expired',
      used: [0],
    })
    expect(await store.settle([{ ...fresh, recorded: fresh.recorded - 1, delta: 5 }], 'y')).to.deep.equal({
      outcome: 'expired',
      used: [15],
    })
  })

  it('settles in the windows that still hold the entry when another window has let it go', async () => {
    const [r] = await store.consume([rate('short', 10, 1_000, 4), rate('long', 10, 60_000, 4)])
    now += 1_000
    const requests = [
      { key: 'short', windowMs: 1_000, recorded: r?.recorded as number, delta: 3 },
      { key: 'long', windowMs: 60_000, recorded: r?.recorded as number, delta: 3 },
    ]
    expect(await store.settle(requests, 'z')).to.deep.equal({ outcome: 'settled', used: [0, 7] })
  })

  it('refuses an entry with more than MAX_REFUND_TAIL entries after it: too deep, nothing changed', async () => {
    const [, t] = await store.consume([rpm, rate('tpm', 1_000_000, 60_000, 10)])
    for (let i = 0; i <= MAX_REFUND_TAIL; i++) {
      now += 1
      await store.consume([rate('tpm', 1_000_000, 60_000, 1)])
    }
    const settle = { key: 'tpm', windowMs: 60_000, recorded: t?.recorded as number, delta: -10 }
    expect(await store.settle([settle], 'deep')).to.deep.equal({
      outcome: 'too-deep',
      used: [10 + MAX_REFUND_TAIL + 1],
    })
    // Nothing was changed.
    expect((await store.peek([rate('tpm', 1_000_000, 60_000, 1)]))[0]?.remaining).to.equal(
      1_000_000 - 10 - MAX_REFUND_TAIL - 1,
    )
  })

  it('a refund after a settle gives back the settled units', async () => {
    const [, t] = await admit(500)
    await store.settle([{ ...t, delta: 300 }], 's')
    expect(await store.refund([t], 800, 'r')).to.deep.equal({ units: 800, outcome: 'refunded' })
    expect(await remaining()).to.deep.equal([9, 1_000])
  })
})
