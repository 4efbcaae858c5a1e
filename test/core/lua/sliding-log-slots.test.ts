import { redisStore, type Store } from '@fleetlimit/core'
import { expect } from 'chai'
import { Redis } from 'ioredis'
import type { WindowRequest, WindowResult } from '../../../packages/core/src/store/store.js'
import { redisClient, uniquePrefix } from '../../support/redis.js'
import { redisUrl } from '../../support/root-hooks.js'

/** A result's server time in µs, exactly (`now` is ms, a double, from them). */
const nowUs = (result: WindowResult | undefined) => Math.round((result?.now as number) * 1000)
const ok = (result: WindowResult | undefined) => result as WindowResult

describe('lua/sliding-log.lua: in-flight slots, through redisStore', () => {
  let redis: Redis
  let prefix: string
  let store: Store
  /** An in-flight window of the tenant 't': `limit` slots, each held `windowMs`. */
  const slots = (limit: number, windowMs = 10_000, key = '{t}:slots'): WindowRequest => ({
    key,
    limit,
    windowMs,
    cost: 1,
    slots: true,
  })
  const rate = (key: string, limit: number, cost: number, windowMs = 60_000): WindowRequest => ({
    key,
    limit,
    windowMs,
    cost,
  })
  const take = async (request: WindowRequest) => ok((await store.consume([request]))[0])
  const stored = (key: string) => `${prefix}:${key}`

  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())
  beforeEach(() => {
    prefix = uniquePrefix()
    store = redisStore(redis, { prefix })
  })

  it('admits up to the limit, then denies with the exact wait until the soonest slot ends', async () => {
    const taken = []
    for (let i = 0; i < 3; i++) {
      const result = await take(slots(3))
      expect(result).to.include({ allowed: true, remaining: 2 - i, retryAfterMs: 0, resetMs: 10_000 })
      expect(result.recorded, 'a slot’s id: the server µs it was taken at').to.equal(nowUs(result))
      taken.push(result)
    }
    const denied = await take(slots(3))
    expect(denied).to.include({ allowed: false, remaining: 0 })
    expect(denied.recorded).to.equal(undefined)
    const [first, , last] = taken.map(nowUs) as [number, number, number]
    expect(denied.retryAfterMs).to.equal(Math.ceil((first + 10_000_000 - nowUs(denied)) / 1000))
    expect(denied.resetMs).to.equal(Math.ceil((last + 10_000_000 - nowUs(denied)) / 1000))
    expect(await redis.zcard(stored('{t}:slots')), 'a denial takes nothing').to.equal(3)
    // A lower limit (a plan's) waits until enough slots end for one more: here two.
    const lower = await take(slots(2))
    const second = taken.map(nowUs)[1] as number
    expect(lower.retryAfterMs).to.equal(Math.ceil((second + 10_000_000 - nowUs(lower)) / 1000))
  })

  it('a peek takes nothing; a free frees a slot once; forged and ended slots free nothing', async () => {
    const a = await take(slots(2))
    const b = await take(slots(2))
    const [peeked] = await store.peek([slots(2)])
    expect(peeked).to.include({ allowed: false, remaining: 0 })
    expect(await redis.zcard(stored('{t}:slots'))).to.equal(2)
    const key = '{t}:slots'
    expect(await store.free?.([{ key, slot: a.recorded as number }])).to.equal(1)
    expect(await store.free?.([{ key, slot: a.recorded as number }]), 'freed already').to.equal(0)
    expect(await store.free?.([{ key, slot: (b.recorded as number) + 12_345 }]), 'forged').to.equal(0)
    expect(await take(slots(2))).to.include({ allowed: true, remaining: 0 })
    // A slot whose end has passed (its score moved into the past) is not held: freeing it frees nothing, and the
    // free removes it.
    await redis.zadd(stored(key), nowUs(b) - 1, String(b.recorded))
    expect(await store.free?.([{ key, slot: b.recorded as number }])).to.equal(0)
    expect(await redis.zscore(stored(key), String(b.recorded))).to.equal(null)
    expect(await take(slots(2))).to.include({ allowed: true, remaining: 0 })
  })

  it('two slots taken at one instant get distinct ids: the second is the next integer up', async () => {
    // Made in one turn, the two calls go in one script run: one TIME.
    const [a, b] = await Promise.all([take(slots(5)), take(slots(5))])
    expect(nowUs(b)).to.equal(nowUs(a))
    expect([a.recorded, b.recorded]).to.deep.equal([nowUs(a), nowUs(a) + 1])
    expect([a.remaining, b.remaining]).to.deep.equal([4, 3])
    expect(await redis.zcard(stored('{t}:slots'))).to.equal(2)
  })

  it('a free announces each key it freed a slot of, once, on `<prefix>:slot-free`, to every onSlotFree', async () => {
    const other = new Redis(redisUrl())
    const subscriber = new Redis(redisUrl())
    try {
      // Another process's store, listening (held weakly by the store: `heard` keeps it), and a plain subscriber.
      const heard = {
        keys: [] as (readonly string[] | undefined)[],
        listening: false,
        next: undefined as (() => void) | undefined,
        listener: (keys: readonly string[] | undefined) => {
          // `undefined` once the subscription is confirmed (anything freed before was missed).
          if (keys === undefined) heard.listening = true
          else heard.keys.push(keys)
          heard.next?.()
        },
      }
      const heardOne = () => new Promise<void>((resolve) => (heard.next = resolve))
      const subscribed = heardOne()
      redisStore(other, { prefix }).onSlotFree?.(heard.listener)
      await subscribed
      expect(heard.listening).to.equal(true)
      const raw: string[] = []
      let rawNext: (() => void) | undefined
      await subscriber.subscribe(`${prefix}:slot-free`)
      subscriber.on('message', (_channel: string, message: string) => {
        raw.push(message)
        rawNext?.()
      })
      const a = await take(slots(5, 10_000, '{t}:a'))
      const a2 = await take(slots(5, 10_000, '{t}:a'))
      const b = await take(slots(5, 10_000, '{t}:b'))
      const freed = await store.free?.([
        { key: '{t}:a', slot: a.recorded as number },
        { key: '{t}:a', slot: a2.recorded as number },
        { key: '{t}:b', slot: b.recorded as number },
        { key: '{t}:b', slot: 1 },
      ])
      expect(freed).to.equal(3)
      // A free that frees nothing publishes nothing: the messages heard are the first free's and the last's.
      expect(await store.free?.([{ key: '{t}:a', slot: a.recorded as number }])).to.equal(0)
      const c = await take(slots(5, 10_000, '{t}:c'))
      await store.free?.([{ key: '{t}:c', slot: c.recorded as number }])
      while (heard.keys.length < 2) await heardOne()
      while (raw.length < 2) await new Promise<void>((resolve) => (rawNext = resolve))
      expect(heard.keys).to.deep.equal([['{t}:a', '{t}:b'], ['{t}:c']])
      expect(raw).to.deep.equal([`${prefix}:{t}:a ${prefix}:{t}:b`, `${prefix}:{t}:c`])
    } finally {
      other.disconnect()
      subscriber.disconnect()
    }
  })

  it('10,000 concurrent frees of one slot free it once, and announce it once', async () => {
    const subscriber = new Redis(redisUrl())
    try {
      const raw: string[] = []
      let next: (() => void) | undefined
      await subscriber.subscribe(`${prefix}:slot-free`)
      subscriber.on('message', (_channel: string, message: string) => {
        raw.push(message)
        next?.()
      })
      const slot = await take(slots(1))
      const frees = await Promise.all(
        Array.from({ length: 10_000 }, () => store.free?.([{ key: '{t}:slots', slot: slot.recorded as number }])),
      )
      expect(frees.filter((n) => n === 1)).to.have.length(1)
      expect(frees.filter((n) => n === 0)).to.have.length(9_999)
      // Messages arrive in the order they were published: the next free's message comes after any of these.
      const other = await take(slots(1, 10_000, '{t}:other'))
      const last = new Promise<void>((resolve) => (next = () => raw.length === 2 && resolve()))
      await store.free?.([{ key: '{t}:other', slot: other.recorded as number }])
      await last
      expect(raw).to.deep.equal([`${prefix}:{t}:slots`, `${prefix}:{t}:other`])
    } finally {
      subscriber.disconnect()
    }
  })

  it('extend keeps held slots until `ms` from now at least, and the key’s TTL covers them', async () => {
    const key = '{t}:slots'
    const a = await take(slots(2, 1_000))
    const end = Number(await redis.zscore(stored(key), String(a.recorded)))
    expect(end).to.equal(nowUs(a) + 1_000_000)
    expect(await redis.pexpiretime(stored(key)), 'a new key lives until its slot ends').to.equal(Math.ceil(end / 1000))
    expect(await store.extend?.([{ key, slot: a.recorded as number }], 60_000)).to.equal(1)
    const extended = Number(await redis.zscore(stored(key), String(a.recorded)))
    expect(extended).to.be.within(nowUs(a) + 60_000_000, nowUs(a) + 61_000_000)
    expect(await redis.pexpiretime(stored(key))).to.equal(Math.ceil(extended / 1000))
    // A shorter extend keeps the later end.
    expect(await store.extend?.([{ key, slot: a.recorded as number }], 1)).to.equal(1)
    expect(Number(await redis.zscore(stored(key), String(a.recorded)))).to.equal(extended)
    // The slot's new end bounds the reset, and a slot taken after it does not shorten the key's life.
    const b = await take(slots(2, 1_000))
    expect(b.resetMs).to.equal(Math.ceil((extended - nowUs(b)) / 1000))
    expect(await redis.pexpiretime(stored(key))).to.equal(Math.ceil(extended / 1000))
    // A freed slot, a forged one and an ended one are not taken again.
    await store.free?.([{ key, slot: a.recorded as number }])
    await redis.zadd(stored(key), nowUs(b) - 1, String(b.recorded))
    const none = [a.recorded, b.recorded, 7].map((slot) => ({ key, slot: slot as number }))
    expect(await store.extend?.(none, 60_000)).to.equal(0)
    expect(await redis.exists(stored(key)), 'its last slot ended: the key is gone').to.equal(0)
  })

  it('a shadow slot window is reported, does not decide, and takes a slot only when it has room', async () => {
    const calls = [rate('{t}:rate', 3, 1), { ...slots(1), shadow: true }]
    const first = await store.consume(calls)
    const second = await store.consume(calls)
    expect([first, second].map((r) => r.map((w) => w.allowed))).to.deep.equal([
      [true, true],
      [true, false],
    ])
    expect(first[1]?.recorded).to.equal(nowUs(first[1]))
    expect(second[1]?.recorded, 'no slot taken').to.equal(undefined)
    expect(second[0]?.remaining).to.equal(1)
    expect(await redis.zcard(stored('{t}:slots'))).to.equal(1)
  })

  it('rate windows of different costs and a slot window: admitted only if all have room, counted in all only then', async () => {
    const call = (tokens: number) => [rate('{t}:rpm', 5, 1), rate('{t}:tpm', 1_500, tokens), slots(2)]
    const view = (results: WindowResult[]) => results.map((r) => [r.allowed, r.remaining, r.recorded !== undefined])
    expect(view(await store.consume(call(500)))).to.deep.equal([
      [true, 4, true],
      [true, 1_000, true],
      [true, 1, true],
    ])
    const second = await store.consume(call(500))
    expect(view(second)).to.deep.equal([
      [true, 3, true],
      [true, 500, true],
      [true, 0, true],
    ])
    // The units recorded in each window: its own cost, at the call's time.
    expect(second[1]?.recorded).to.equal(second[0]?.recorded)
    // The slots are full: the rate windows have room, and count nothing.
    expect(view(await store.consume(call(500)))).to.deep.equal([
      [true, 3, false],
      [true, 500, false],
      [false, 0, false],
    ])
    expect(view(await store.peek(call(1)))).to.deep.equal([
      [true, 3, false],
      [true, 500, false],
      [false, 0, false],
    ])
    await store.free?.([{ key: '{t}:slots', slot: second[2]?.recorded as number }])
    // The token window lacks room: the slot is not taken, and the request window counts nothing.
    expect(view(await store.consume(call(501)))).to.deep.equal([
      [true, 3, false],
      [false, 500, false],
      [true, 1, false],
    ])
    expect(view(await store.consume(call(500)))).to.deep.equal([
      [true, 2, true],
      [true, 0, true],
      [true, 0, true],
    ])
    expect(await redis.zcard(stored('{t}:slots'))).to.equal(2)
  })

  it('a key of the wrong type (WRONGTYPE) fails the calls that name it alone, and changes nothing', async () => {
    await redis.set(stored('{t}:broken'), 'not a set')
    await store.consume([rate('{t}:log', 5, 1)])
    const slot = await take(slots(5))
    // One turn: the calls go in one script run.
    const [broken, logAsSlots, slotsAsLog, good] = await Promise.allSettled([
      store.consume([rate('{t}:rate', 5, 2), slots(5, 10_000, '{t}:broken')]),
      store.consume([rate('{t}:rate', 5, 3), slots(5, 10_000, '{t}:log')]),
      store.consume([rate('{t}:slots', 5, 1)]),
      store.consume([rate('{t}:rate', 5, 1), slots(5)]),
    ])
    for (const failed of [broken, logAsSlots, slotsAsLog]) {
      expect(failed.status).to.equal('rejected')
      const error = (failed as PromiseRejectedResult).reason as Error
      expect(error.name).to.equal('ReplyError')
      expect(error.message).to.match(/^WRONGTYPE/)
    }
    expect(good.status).to.equal('fulfilled')
    expect((good as PromiseFulfilledResult<WindowResult[]>).value.map((r) => r.remaining)).to.deep.equal([4, 3])
    const failedFree = await store
      .free?.([
        { key: '{t}:slots', slot: slot.recorded as number },
        { key: '{t}:broken', slot: 1 },
      ])
      .catch((error: unknown) => error)
    expect(failedFree)
      .to.be.an('error')
      .with.property('message')
      .that.matches(/^WRONGTYPE/)
    expect(await redis.zcard(stored('{t}:slots')), 'the free failed before freeing anything').to.equal(2)
    expect(await redis.get(stored('{t}:broken'))).to.equal('not a set')
  })
})
