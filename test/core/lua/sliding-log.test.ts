import { expectAdmittedExactlyAt } from '@fleetlimit/test-kit/exact-wait'
import { logUnits } from '@fleetlimit/test-kit/log-units'
import { expect } from 'chai'
import type { Redis } from 'ioredis'
import { createScriptRunner } from '../../../packages/core/src/store/script-runner.js'
import { slidingLogScript } from '../../../packages/core/src/store/scripts.generated.js'
import { readSlidingLog } from '../../../packages/core/src/store/sliding-log-call.js'
import { redisClient, uniquePrefix } from '../../support/redis.js'
import { callSlidingLog, textCall } from '../../support/sliding-log-call.js'

describe('lua/sliding-log.lua on a real Redis', () => {
  let redis: Redis
  let key: string

  /** One call of sliding-log.lua on the test's key. */
  const call = (limit: number, windowMs: number, cost = 1, mode: 'consume' | 'peek' = 'consume', deadlineUs = 0) =>
    callSlidingLog(redis, key, { limit, windowMs, cost, mode, deadlineUs })
  /** Any operation, its reply parsed for `windows` windows. */
  const raw = async (keys: string[], args: (string | number)[], windows: number) =>
    readSlidingLog(await createScriptRunner(redis).runBuffer(slidingLogScript, keys, [textCall(args)]), windows)

  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())
  beforeEach(() => {
    key = `${uniquePrefix()}:k`
  })

  it('admits up to the limit, then denies with the exact wait', async () => {
    const admitted = []
    for (let i = 0; i < 3; i++) {
      const reply = await call(3, 10_000)
      expect(reply).to.include({ allowed: 1, remaining: 2 - i, retryAfterMs: 0, resetMs: 10_000, units: 1 })
      expect(reply.recordedUs, 'recorded at the decision’s time').to.equal(reply.nowUs)
      admitted.push(reply.recordedUs)
    }
    const denied = await call(3, 10_000)
    expect(denied).to.include({ allowed: 0, remaining: 0, recordedUs: 0, units: 0 })
    const [oldest, , newest] = admitted as [number, number, number]
    expect(denied.retryAfterMs).to.equal(Math.ceil((oldest + 10_000_000 - denied.nowUs) / 1000))
    expect(denied.resetMs).to.equal(Math.ceil((newest + 10_000_000 - denied.nowUs) / 1000))
  })

  it('retrying at retryAfterMs succeeds and 5 ms before it fails', async function () {
    this.timeout(10_000)
    await call(1, 300)
    const denied = await call(1, 300)
    const timed = async () => {
      const reply = await call(1, 300)
      return { allowed: reply.allowed === 1, retryAfterMs: reply.retryAfterMs, now: reply.nowUs / 1000 }
    }
    const deniedAt = denied.nowUs / 1000
    await expectAdmittedExactlyAt(deniedAt + denied.retryAfterMs, deniedAt, timed)
  })

  it('a cost above what is left waits for exactly enough units to leave', async () => {
    const first = await call(5, 10_000, 2)
    const second = await call(5, 10_000, 2)
    expect(await call(5, 10_000, 1)).to.include({ allowed: 1, remaining: 0 })
    const denied = await call(5, 10_000, 3)
    expect(denied).to.include({ allowed: 0, remaining: 0 })
    // Three units must leave: the third oldest is a unit of the second call.
    expect(denied.retryAfterMs).to.equal(Math.ceil((second.recordedUs + 10_000_000 - denied.nowUs) / 1000))
    expect(first.recordedUs).to.be.below(second.recordedUs)
    expect(await logUnits(redis, key), 'a denial adds nothing').to.equal(5)
  })

  it('counts a thousand concurrent calls exactly: one entry per distinct microsecond, 9 bytes each', async () => {
    const replies = await Promise.all(Array.from({ length: 1000 }, () => call(2000, 60_000)))
    expect(replies.every((r) => r.allowed === 1)).to.equal(true)
    expect(await logUnits(redis, key)).to.equal(1000)
    const remaining = replies.map((r) => r.remaining).sort((a, b) => a - b)
    expect(remaining[0]).to.equal(1000)
    expect(new Set(remaining).size).to.equal(1000)
    const instants = new Set(replies.map((r) => r.recordedUs)).size
    expect(await redis.strlen(key)).to.equal(instants * 9 + 85)
  })

  it('a window over 2^37 µs (about 38 hours) keeps 10-byte entries; one up to it, 9-byte entries', async () => {
    for (const [windowMs, entryBytes] of [
      [137_438_953, 9],
      [137_438_954, 10],
    ] as const) {
      key = `${uniquePrefix()}:k`
      const admitted = []
      for (let i = 0; i < 3; i++) admitted.push(await call(3, windowMs))
      const instants = new Set(admitted.map((r) => r.recordedUs)).size
      expect(await redis.strlen(key), `${windowMs} ms`).to.equal(instants * entryBytes + 85)
      expect(await logUnits(redis, key)).to.equal(3)
      const denied = await call(3, windowMs)
      const oldest = admitted[0]?.recordedUs as number
      expect(denied).to.include({ allowed: 0, remaining: 0 })
      expect(denied.retryAfterMs).to.equal(Math.ceil((oldest + windowMs * 1000 - denied.nowUs) / 1000))
    }
  })

  it('keeps a hot key exact across many windows: out-of-window entries are dropped by a rewrite', async function () {
    this.timeout(20_000)
    // 3 000 calls over many windows of 20 ms: the log is rewritten whenever its dead entries outnumber the live.
    let largest = 0
    let live = 0
    for (let i = 0; i < 3_000; i++) {
      const reply = await call(1_000_000, 20)
      expect(reply.allowed).to.equal(1)
      live = Math.max(live, 1_000_000 - reply.remaining)
      if (i % 50 === 0) largest = Math.max(largest, await redis.strlen(key))
    }
    expect(await logUnits(redis, key), 'only the last window’s units are held').to.be.below(3_000)
    expect(largest, 'the log holds at most about twice a window’s entries').to.be.at.most(2 * (live + 64) * 9 + 85)
  })

  it('sets a TTL once per window, one window beyond the newest unit’s exit', async () => {
    await call(5, 2_000)
    expect(await redis.pttl(key)).to.be.within(2_000, 4_000)
    await redis.pexpire(key, 3_000)
    // The stored expiry still covers the newest unit: this call sends no PEXPIRE.
    await call(5, 2_000)
    expect(await redis.pttl(key)).to.be.at.most(3_000)
  })

  it('records nothing on denial and nothing on peek', async () => {
    await call(1, 10_000)
    const before = await redis.getBuffer(key)
    await call(1, 10_000)
    const peeked = await call(1, 10_000, 1, 'peek')
    expect(peeked.allowed).to.equal(0)
    expect(await redis.getBuffer(key)).to.deep.equal(before)
    await redis.del(key)
    expect(await call(1, 10_000, 1, 'peek')).to.include({ allowed: 1, remaining: 1, resetMs: 0 })
    expect(await redis.exists(key)).to.equal(0)
  })

  it('several windows at once: records in every window or in none, each with its exact wait', async () => {
    const tag = `${key}:{t}`
    const keys = [`${tag}:global`, `${tag}:route`]
    const multi = (cost: number) => raw(keys, ['c', cost, 0, 5, 10_000, '0', 2, 3_000, '0'], 2)
    const first = await multi(1)
    expect(first.status).to.equal(1)
    const admitted = await multi(1)
    expect(admitted.windows.map((w) => [w.allowed, w.remaining, w.retryAfterMs, w.resetMs])).to.deep.equal([
      [true, 3, 0, 10_000],
      [true, 0, 0, 3_000],
    ])
    const denied = await multi(1)
    expect(denied.status).to.equal(0)
    expect(denied.windows.map((w) => [w.allowed, w.remaining, w.recordedUs])).to.deep.equal([
      [true, 3, 0],
      [false, 0, 0],
    ])
    const routeFirst = first.windows[1]?.recordedUs as number
    expect(denied.windows[1]?.retryAfterMs).to.equal(Math.ceil((routeFirst + 3_000_000 - denied.nowUs) / 1000))
    expect(await logUnits(redis, keys[0] as string), 'the denial added nothing to the window that had room').to.equal(2)
  })

  it('a lease records its units at its expiry; a release removes exactly the units named, once', async () => {
    const lease = await raw([key], ['l', 10, 0, 100, 10_000, '0', 1, 1, 50], 1)
    const window = lease.windows[0] as NonNullable<(typeof lease.windows)[0]>
    expect(lease).to.include({ status: 1, units: 10 })
    expect(window.recordedUs).to.equal(lease.nowUs + 50_000)
    expect(window).to.include({ remaining: 90, resetMs: 10_050 })
    // A call made while the lease is out is recorded at its expiry too: entries stay in time order.
    expect((await call(100, 10_000)).recordedUs).to.equal(window.recordedUs)
    const release = (units: number, at = window.recordedUs) => raw([key], ['r', units, 0, at, 10_000], 0)
    expect(await release(7)).to.include({ status: 1, units: 7 })
    expect(await logUnits(redis, key)).to.equal(4)
    expect(await release(7), 'only the entry’s units remain to remove').to.include({ units: 4 })
    expect(await release(1)).to.include({ status: 0, units: 0 })
    expect(await release(1, window.recordedUs - 1), 'no entry at that time').to.include({ units: 0 })
  })

  it('a lease longer than its log can record (2^39 µs, 2^47 µs with 10-byte entries) fails alone, records nothing', async () => {
    const lease = (k: string, windowMs: number, ttlMs: number) =>
      raw([k], ['l', 1, 0, 100, windowMs, '0', 1, 1, ttlMs], 1)
    const longest = Math.floor(2 ** 39 / 1000)
    const error = await lease(key, 60_000, longest + 1).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error)
      .to.be.an('error')
      .with.property('message')
      .that.includes(`a lease of ${longest + 1} ms`)
    expect(await redis.exists(key), 'nothing recorded').to.equal(0)
    const longestFits = await lease(key, 60_000, longest)
    expect(longestFits.windows[0]?.recordedUs).to.equal(longestFits.nowUs + longest * 1000)
    const wide = `${uniquePrefix()}:wide`
    expect((await lease(wide, 137_438_954, longest + 1)).units, 'a 10-byte log holds it').to.equal(1)
    expect(await logUnits(redis, wide)).to.equal(1)
  })

  it('a lease too large for what is left is denied with the wait until `waitFor` units fit', async () => {
    await call(10, 10_000, 8)
    const denied = await raw([key], ['l', 5, 0, 10, 10_000, '0', 3, 4, 50], 1)
    expect(denied).to.include({ status: 0, units: 0 })
    expect(denied.windows[0]).to.include({ allowed: false, remaining: 2 })
    expect(denied.windows[0]?.retryAfterMs).to.be.within(9_990, 10_000)
    expect(await raw([key], ['l', 5, 0, 10, 10_000, '0', 2, 2, 50], 1)).to.include({ status: 1, units: 2 })
  })

  it('a hold (z) on a new key is its header alone, for as long as the hold; a consume then waits it out', async () => {
    expect(await raw([key], ['z', 30_000, 0, 0, 1_000, '0'], 0)).to.include({ status: 1 })
    expect(await redis.strlen(key), 'a header alone').to.equal(85)
    expect(await redis.pttl(key)).to.be.within(29_000, 30_000)
    const denied = await call(10, 1_000)
    expect(denied, 'a consume of a held key: nothing left').to.include({ allowed: 0, remaining: 0, units: 0 })
    expect(denied.retryAfterMs).to.be.within(29_000, 30_000)
    expect(await call(10, 1_000, 1, 'peek'), 'a peek: the window’s room').to.include({ allowed: 0, remaining: 10 })
    // A shorter hold keeps the longer one; the key still holds no entry.
    await raw([key], ['z', 10, 0, 0, 1_000, '0'], 0)
    expect((await call(10, 1_000)).retryAfterMs).to.be.within(29_000, 30_000)
    expect(await redis.strlen(key)).to.equal(85)
  })

  it('a hold keeps a key with entries past their window, and ends for every call once it has passed', async () => {
    await call(10, 100)
    await raw([key], ['z', 60_000, 0, 0, 100, '0'], 0)
    expect(await redis.pttl(key), 'the TTL covers the hold').to.be.within(59_000, 60_000)
    expect(await logUnits(redis, key)).to.equal(1)
    const lease = await raw([key], ['l', 5, 0, 10, 100, '0', 1, 1, 10], 1)
    expect(lease).to.include({ status: 0, units: 0 })
    expect(lease.windows[0]?.retryAfterMs).to.be.within(59_000, 60_000)
    // A hold in the past is none: a hold of 1 ms, then a consume once it has passed.
    const other = `${key}:short`
    const ask = async () => {
      const reply = await callSlidingLog(redis, other, { limit: 1, windowMs: 100 })
      return { allowed: reply.allowed === 1, now: reply.nowUs / 1000, retryAfterMs: reply.retryAfterMs }
    }
    const held = await raw([other], ['z', 20, 0, 0, 100, '0'], 0)
    await expectAdmittedExactlyAt(held.nowUs / 1000 + 20, held.nowUs / 1000, ask)
  })

  it('a block (flags) holds a window once it denies a consume for lack of room, not a peek, not on a hold', async () => {
    await call(1, 10_000)
    const blocked = (mode: 'c' | 'p') => raw([key], [mode, 1, 0, 1, 10_000, '60000'], 1)
    expect((await blocked('p')).windows[0]?.retryAfterMs, 'a peek').to.be.within(9_000, 10_000)
    const first = (await blocked('c')).windows[0]
    expect(first).to.include({ allowed: false })
    expect(first?.retryAfterMs).to.be.within(59_000, 60_000)
    expect(await redis.pttl(key)).to.be.within(59_000, 60_000)
    expect((await call(1, 10_000)).retryAfterMs, 'held, whatever the call’s flags').to.be.within(58_000, 60_000)
  })

  it('a shadow window (several windows) does not decide the call, and records only what it has room for', async () => {
    const keys = [`${key}:{t}:enforced`, `${key}:{t}:shadow`]
    const both = () => raw(keys, ['c', 1, 0, 3, 10_000, '0', 1, 10_000, 's0'], 2)
    const replies = [await both(), await both(), await both(), await both()]
    expect(replies.map((r) => r.status)).to.deep.equal([1, 1, 1, 0])
    expect(replies.map((r) => r.windows[1]?.allowed)).to.deep.equal([true, false, false, false])
    expect(await logUnits(redis, keys[0] as string)).to.equal(3)
    expect(await logUnits(redis, keys[1] as string)).to.equal(1)
  })

  it('a release of several keys (r) removes the units recorded at each key’s time', async () => {
    const keys = [`${key}:{t}:a`, `${key}:{t}:b`]
    const admitted = await raw(keys, ['c', 3, 0, 10, 10_000, '0', 10, 60_000, '0'], 2)
    const [a, b] = admitted.windows
    const released = await raw(keys, ['r', 2, 0, a?.recordedUs as number, 10_000, b?.recordedUs as number, 60_000], 0)
    expect(released).to.include({ status: 1, units: 2 })
    expect([await logUnits(redis, keys[0] as string), await logUnits(redis, keys[1] as string)]).to.deep.equal([1, 1])
  })

  it('a refund under a marker (r, last key (0, 0)) removes its units once, however often it is sent', async () => {
    const keys = [`${key}:{t}:a`, `${key}:{t}:b`]
    const marker = `${key}:{t}:a:refund:id-1`
    const admitted = await raw(keys, ['c', 3, 0, 10, 10_000, '0', 10, 60_000, '0'], 2)
    const [a, b] = admitted.windows
    const refund = ['r', 3, 0, a?.recordedUs as number, 10_000, b?.recordedUs as number, 60_000, 0, 0]
    expect(await raw([...keys, marker], refund, 0)).to.include({ status: 1, units: 3 })
    expect(await raw([...keys, marker], refund, 0), 'sent again').to.include({ status: 2, units: 0 })
    expect([await logUnits(redis, keys[0] as string), await logUnits(redis, keys[1] as string)]).to.deep.equal([0, 0])
    // The marker lasts as long as the units could count: the longer window's, from the admission.
    const ttl = await redis.pttl(marker)
    expect(ttl).to.be.within(59_000, 60_000)
    // A refund that finds nothing to remove sets no marker.
    const none = `${key}:{t}:a:refund:id-2`
    expect(await raw([keys[0] as string, none], ['r', 1, 0, 1, 10_000, 0, 0], 0)).to.include({ status: 0, units: 0 })
    expect(await redis.exists(none)).to.equal(0)
  })

  it('a refund with more than 2,000 entries after its own changes nothing and says so (status 3)', async function () {
    this.timeout(20_000)
    // Sequential calls: each a run of its own, at its own microsecond, so each adds an entry.
    const refundAfter = async (k: string, later: number) => {
      const first = await callSlidingLog(redis, k, { limit: 3_000, windowMs: 600_000, cost: 2 })
      for (let i = 0; i < later; i++) await callSlidingLog(redis, k, { limit: 3_000, windowMs: 600_000 })
      const marker = `${k}:refund:x`
      const reply = await raw([k, marker], ['r', 2, 0, first.recordedUs, 600_000, 0, 0], 0)
      return { reply, units: await logUnits(redis, k), marked: await redis.exists(marker) }
    }
    const deepest = await refundAfter(`${key}:{a}`, 2_000)
    expect(deepest).to.deep.include({ units: 2_000, marked: 1 })
    expect(deepest.reply).to.include({ status: 1, units: 2 })
    const tooDeep = await refundAfter(`${key}:{b}`, 2_001)
    expect(tooDeep).to.deep.include({ units: 2_003, marked: 0 })
    expect(tooDeep.reply).to.include({ status: 3, units: 0 })
  })

  it('after SCRIPT FLUSH the next call succeeds by EVAL, with no error', async () => {
    await call(5, 10_000)
    await redis.script('FLUSH')
    const [loaded] = (await redis.script('EXISTS', slidingLogScript.sha1)) as [number]
    expect(loaded).to.equal(0)
    expect(await call(5, 10_000)).to.include({ allowed: 1, remaining: 3 })
    const [reloaded] = (await redis.script('EXISTS', slidingLogScript.sha1)) as [number]
    expect(reloaded, 'EVAL cached the script again').to.equal(1)
  })
})
