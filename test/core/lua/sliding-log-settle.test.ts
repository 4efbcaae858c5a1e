import { redisStore, type Store } from '@fleetlimit/core'
import { expect } from 'chai'
import type { Redis } from 'ioredis'
import { DeadlineExceeded } from '../../../packages/core/src/store/guarded-call.js'
import type { SettleRequest, WindowRequest, WindowResult } from '../../../packages/core/src/store/store.js'
import { redisClient, uniquePrefix } from '../../support/redis.js'

describe('lua/sliding-log.lua: settles (s), through redisStore', () => {
  let redis: Redis
  let prefix: string
  let store: Store
  const A = { key: '{t}:a', limit: 10, windowMs: 10_000 }
  const B = { key: '{t}:b', limit: 100, windowMs: 60_000 }
  const consume = async (cost: number, windows = [A, B]) =>
    store.consume(windows.map((w): WindowRequest => ({ ...w, cost })))
  /** What each window holds now. */
  const used = async (windows = [A, B]) =>
    (await store.peek(windows.map((w) => ({ ...w, cost: 1 })))).map((r, i) => (windows[i]?.limit ?? 0) - r.remaining)
  /** A settle of an admission's entries (its results) by `deltas`, one per window. */
  const settleOf = (results: readonly WindowResult[], deltas: readonly number[], windows = [A, B]) =>
    results.map(
      (r, i): SettleRequest => ({
        key: windows[i]?.key as string,
        windowMs: windows[i]?.windowMs as number,
        recorded: r.recorded as number,
        delta: deltas[i] as number,
      }),
    )
  const settle = (requests: readonly SettleRequest[], id: string) => store.settle?.(requests, id)
  const marker = (id: string) => `${prefix}:{t}:a:receipt:${id}`

  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())
  beforeEach(() => {
    prefix = uniquePrefix()
    store = redisStore(redis, { prefix })
  })

  it('settles up at the entry’s time: the units leave the window when the admission does', async () => {
    await consume(3)
    const second = await consume(2)
    expect(await settle(settleOf(second, [5, 5]), 'up')).to.deep.equal({ outcome: 'settled', used: [10, 10] })
    expect(await used()).to.deep.equal([10, 10])
    // Four units must leave A: the first entry holds three, so the settled entry must leave too, at its own time.
    const [denied] = await store.consume([{ ...A, cost: 4 }])
    const at = second[0]?.recorded as number
    expect(denied?.retryAfterMs).to.equal(Math.ceil((at + 10_000_000 - Math.round((denied?.now ?? 0) * 1000)) / 1000))
    // A window may go over its limit.
    expect(await settle(settleOf(second, [4, 0]), 'over')).to.deep.equal({ outcome: 'settled', used: [14, 10] })
    expect((await store.peek([{ ...A, cost: 1 }]))[0]).to.include({ allowed: false, remaining: 0 })
  })

  it('settles down, at most the units the entry holds, each window by its own delta', async () => {
    await consume(4)
    const admitted = await consume(3)
    expect(await settle(settleOf(admitted, [-1, -10]), 'down')).to.deep.equal({ outcome: 'settled', used: [6, 4] })
    expect(await used()).to.deep.equal([6, 4])
  })

  it('at most once per id: a retry changes nothing and says so; its marker lives as long as the units count', async () => {
    const admitted = await consume(3)
    const requests = settleOf(admitted, [2, -1])
    expect(await settle(requests, 'once')).to.deep.equal({ outcome: 'settled', used: [5, 2] })
    expect(await settle(requests, 'once')).to.deep.equal({ outcome: 'already-settled', used: [5, 2] })
    expect(await used()).to.deep.equal([5, 2])
    expect(await redis.pttl(marker('once'))).to.be.within(59_000, 60_000)
    // Another id is another settle.
    expect(await settle(requests, 'twice')).to.deep.equal({ outcome: 'settled', used: [7, 1] })
    expect(await used()).to.deep.equal([7, 1])
  })

  it('a refund under a settle’s id takes back what that settle moved; a settle after it changes nothing', async () => {
    await consume(4)
    const admitted = await consume(3)
    const refunds = admitted.map((r, i) => ({ ...([A, B][i] as typeof A), recorded: r.recorded as number }))
    expect(await settle(settleOf(admitted, [2, -1]), 'a')).to.deep.equal({ outcome: 'settled', used: [9, 6] })
    // The admission's 3 units in each window, and the settle's +2 and -1: 5 and 2.
    expect(await store.refund?.(refunds, 3, 'a')).to.deep.equal({ units: 5, outcome: 'refunded' })
    expect(await used()).to.deep.equal([4, 4])
    expect(await redis.get(marker('a'))).to.equal('r')
    expect(await store.refund?.(refunds, 3, 'a')).to.deep.equal({ units: 0, outcome: 'already-refunded' })
    expect(await settle(settleOf(admitted, [2, -1]), 'a')).to.deep.equal({ outcome: 'refunded', used: [4, 4] })
    // Refunded first: a settle of its id changes nothing; nor does one settled to nothing leave a refund anything.
    const second = await consume(3)
    const again = second.map((r, i) => ({ ...([A, B][i] as typeof A), recorded: r.recorded as number }))
    expect(await store.refund?.(again, 3, 'b')).to.deep.equal({ units: 3, outcome: 'refunded' })
    expect(await settle(settleOf(second, [5, 5]), 'b')).to.deep.equal({ outcome: 'refunded', used: [4, 4] })
    const third = await consume(3)
    expect(await settle(settleOf(third, [-3, -3]), 'c')).to.deep.equal({ outcome: 'settled', used: [4, 4] })
    const rest = third.map((r, i) => ({ ...([A, B][i] as typeof A), recorded: r.recorded as number }))
    expect(await store.refund?.(rest, 3, 'c')).to.deep.equal({ units: 0, outcome: 'expired' })
    expect(await used()).to.deep.equal([4, 4])
  })

  it('expired when no window holds the entry: nothing changed, no marker; a window without it is left alone', async () => {
    const admitted = await consume(3)
    const forged = admitted.map((r) => ({ ...r, recorded: (r.recorded as number) - 1 }))
    expect(await settle(settleOf(forged, [5, 5]), 'gone')).to.deep.equal({ outcome: 'expired', used: [3, 3] })
    expect(await redis.exists(marker('gone'))).to.equal(0)
    const half = [forged[0], admitted[1]] as WindowResult[]
    expect(await settle(settleOf(half, [5, 5]), 'half')).to.deep.equal({ outcome: 'settled', used: [3, 8] })
    expect(await redis.exists(marker('half'))).to.equal(1)
  })

  it('applies nothing past its deadline', async () => {
    const admitted = await consume(3)
    const late = await store
      .settle?.(settleOf(admitted, [5, 5]), 'late', { at: performance.now() - 50 })
      .catch((error: unknown) => error)
    expect(late).to.be.instanceOf(DeadlineExceeded)
    expect(await used()).to.deep.equal([3, 3])
    expect(await redis.exists(marker('late'))).to.equal(0)
    expect(await store.settle?.(settleOf(admitted, [5, 5]), 'late', { at: performance.now() + 1_000 })).to.deep.equal({
      outcome: 'settled',
      used: [8, 8],
    })
  })

  it('an entry with more than 2,000 entries after it changes nothing in any window (too-deep)', async function () {
    this.timeout(20_000)
    const wide = { key: '{t}:a', limit: 5_000, windowMs: 600_000 }
    const [first] = await consume(2, [wide, B])
    const admitted = [first, (await consume(2, [B]))[0]] as WindowResult[]
    // Sequential calls: each a run of its own, at its own microsecond, so each adds an entry.
    for (let i = 0; i < 2_001; i++) await consume(1, [wide])
    const requests = settleOf(admitted, [3, 3], [wide, B])
    expect(await settle(requests, 'deep')).to.deep.equal({ outcome: 'too-deep', used: [2_003, 4] })
    expect(await used([wide, B])).to.deep.equal([2_003, 4])
    expect(await redis.exists(marker('deep'))).to.equal(0)
  })

  it('a key of the wrong type fails the settle alone, and changes nothing', async () => {
    const admitted = await consume(3)
    await redis.zadd(`${prefix}:{t}:slots`, 1, 'x')
    const requests = [...settleOf(admitted, [1, 1]), { key: '{t}:slots', windowMs: 1_000, recorded: 1, delta: 1 }]
    const [failed, good] = await Promise.allSettled([settle(requests, 'bad'), settle(settleOf(admitted, [1, 0]), 'ok')])
    expect(failed.status).to.equal('rejected')
    expect(((failed as PromiseRejectedResult).reason as Error).message).to.match(/^WRONGTYPE/)
    expect(good).to.deep.equal({ status: 'fulfilled', value: { outcome: 'settled', used: [4, 3] } })
    expect(await redis.exists(marker('bad'))).to.equal(0)
    expect(await used()).to.deep.equal([4, 3])
  })
})
