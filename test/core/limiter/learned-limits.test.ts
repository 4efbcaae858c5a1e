import { createRateLimiter, type LearnedLimit, memoryStore, redisStore } from '@fleetlimit/core'
import { expect } from 'chai'
import type { Redis } from 'ioredis'
import { limitOf, parseNote } from '../../../packages/core/src/limiter/learned-limits.js'
import { resolvePolicy } from '../../../packages/core/src/limiter/policy.js'
import { optionErrorOfAsync } from '../../support/option-error.js'
import { redisClient, uniquePrefix } from '../../support/redis.js'

const policy = resolvePolicy({ limit: 60, window: '1s', name: 'up' })

describe('learned limits: the notes and their arithmetic', () => {
  it('reads a headers note until its end, and an AIMD note grown a step per window up to the policy', () => {
    expect(limitOf(parseNote('h 20 5000'), 4_999, policy)).to.deep.equal({ limit: 20, source: 'headers' })
    expect(limitOf(parseNote('h 20 5000'), 5_000, policy)).to.equal(undefined)
    const cut = parseNote('a 30 1000 1')
    expect([1_000, 1_999, 2_000, 3_500, 30_999, 31_000].map((t) => limitOf(cut, t, policy)?.limit)).to.deep.equal([
      30,
      30,
      31,
      32,
      59,
      undefined,
    ])
  })

  it('holds an AIMD note just under the rate the upstream refused for 4 windows, then grows past it', () => {
    // Cut to 7 after a 429 when the window held 11: 8, 9, 10, then 10 for 4 windows, then 11, 12.
    const cut = parseNote('a 7 0 1 10')
    expect(Array.from({ length: 10 }, (_, w) => limitOf(cut, w * 1_000, policy)?.limit)).to.deep.equal([
      7, 8, 9, 10, 10, 10, 10, 11, 12, 13,
    ])
    // A step that overshoots `below` stops at it, as one that lands on it does.
    const wide = parseNote('a 7 0 2 10')
    expect(Array.from({ length: 8 }, (_, w) => limitOf(wide, w * 1_000, policy)?.limit)).to.deep.equal([
      7, 9, 10, 10, 10, 10, 12, 14,
    ])
    expect(parseNote('a 7 0 1 6'), 'below under the limit').to.equal(undefined)
  })

  it('reads a note it cannot have written as none', () => {
    for (const text of [
      '',
      'h',
      'h 0 5',
      'h -1 5',
      'h 1.5 5',
      'a 3 1 0',
      'x 1 2',
      'h 1 2 3',
      'a 1e400 1 1',
      'h NaN 1',
    ]) {
      expect(parseNote(text), text).to.equal(undefined)
    }
  })
})

describe('learned limits of a limiter (memory store, its clock in the test)', () => {
  let now = 1_000_000
  const clock = () => now
  const make = (store = memoryStore({ clock })) => createRateLimiter({ store, limit: 60, window: '1s', name: 'up' })

  it('lowers the limit to a stated quota, never above the policy, and back up when the upstream says so', async () => {
    const limiter = make()
    const heard: (LearnedLimit | undefined)[] = []
    limiter.on('learned', (_key, learned) => heard.push(learned))
    expect(await limiter.learned('api')).to.equal(undefined)
    expect(await limiter.learn('api', { source: 'headers', limit: 20 })).to.deep.equal({ limit: 20, source: 'headers' })
    const peek = await limiter.peek('api')
    expect([peek.limit, peek.remaining, peek.learned]).to.deep.equal([20, 20, { limit: 20, source: 'headers' }])
    expect(await limiter.learn('api', { source: 'headers', limit: 100 })).to.equal(undefined)
    expect(await limiter.learned('api')).to.equal(undefined)
    expect((await limiter.peek('api')).limit).to.equal(60)
    expect(heard).to.deep.equal([{ limit: 20, source: 'headers' }, undefined])
  })

  it("a peek of a priority class decides under the learned limit, and says so with the class's answer", async () => {
    const classes = [
      { name: 'interactive', share: 0.7 },
      { name: 'batch', share: 0.3 },
    ]
    const limiter = createRateLimiter({ store: memoryStore({ clock }), limit: 60, window: '1s', priorities: classes })
    await limiter.learn('api', { source: 'headers', limit: 20 })
    expect(await limiter.peek('api', { priority: 'batch' })).to.deep.include({
      allowed: true,
      limit: 20,
      remaining: 20,
      priority: 'batch',
      learned: { limit: 20, source: 'headers' },
    })
  })

  it('lets a stated quota lapse two windows after it was last stated', async () => {
    const store = memoryStore({ clock })
    const limiter = make(store)
    await limiter.learn('api', { source: 'headers', limit: 20 })
    now += 1_999
    // A second limiter on the store reads the note afresh (the first one's cache is good for a window).
    expect(await make(store).learned('api')).to.deep.equal({ limit: 20, source: 'headers' })
    now += 1
    expect(await make(store).learned('api')).to.equal(undefined)
  })

  it('AIMD: cuts to 0.7 on a 429 (once a window), floors at 1, and grows back 2% of the policy per window', async () => {
    const store = memoryStore({ clock })
    const limiter = make(store)
    expect(await limiter.learn('api', { source: 'aimd' })).to.deep.equal({ limit: 42, source: 'aimd' })
    // The 429s of calls sent before the cut say nothing new.
    now += 999
    expect(await limiter.learn('api', { source: 'aimd' })).to.deep.equal({ limit: 42, source: 'aimd' })
    now += 1
    expect(await limiter.learn('api', { source: 'aimd' })).to.deep.equal({ limit: 30, source: 'aimd' })
    // Each cut takes 0.7 of what the limit had grown to since the last one (a window: +1).
    for (const expected of [21, 15, 11, 8]) {
      now += 1_000
      expect((await limiter.learn('api', { source: 'aimd' }))?.limit).to.equal(expected)
    }
    now += 3_000
    expect(await make(store).learned('api')).to.deep.equal({ limit: 11, source: 'aimd' })
    now += 49_000
    expect(await make(store).learned('api')).to.equal(undefined)
  })

  it('AIMD: cuts to 0.7 of what the window held when the refused call was admitted, when lower, at least 1', async () => {
    const limiter = make()
    expect(await limiter.learn('api', { source: 'aimd', used: 21 })).to.deep.equal({ limit: 14, source: 'aimd' })
    now += 1_000
    expect(await limiter.learn('api', { source: 'aimd', used: 100 })).to.deep.equal({ limit: 10, source: 'aimd' })
    now += 1_000
    expect(await limiter.learn('api', { source: 'aimd', used: 1 })).to.deep.equal({ limit: 1, source: 'aimd' })
  })

  it('AIMD: grows back to just under the rate refused, holds there 4 windows, then grows past it', async () => {
    const store = memoryStore({ clock })
    // The window held 11 when the refused call was admitted: cut to 7, back to 10 in 3 windows, 11 after 4 more.
    expect(await make(store).learn('api', { source: 'aimd', used: 11 })).to.deep.equal({ limit: 7, source: 'aimd' })
    const limits: (number | undefined)[] = []
    for (let w = 1; w <= 8; w++) {
      now += 1_000
      // A new limiter (a process) each window: one reads the store's note at most once a window.
      limits.push((await make(store).learned('api'))?.limit)
    }
    expect(limits).to.deep.equal([8, 9, 10, 10, 10, 10, 11, 12])
  })

  it('refuses a lesson it cannot take, and one that names no policy when several learn', async () => {
    const limiter = make()
    for (const [lesson, option] of [
      [{ source: 'headers' }, 'lesson.limit'],
      [{ source: 'headers', limit: 0 }, 'lesson.limit'],
      [{ source: 'aimd', limit: 3 }, 'lesson'],
      [{ source: 'guess' }, 'lesson'],
      [null, 'lesson'],
    ] as const) {
      expect((await optionErrorOfAsync(() => limiter.learn('api', lesson as never))).option).to.equal(option)
    }
    const several = createRateLimiter({
      policies: [
        { limit: 5, window: '1s', name: 'a' },
        { limit: 50, window: '1m', name: 'b' },
      ],
    })
    // Several policies learn each its own limit: a lesson names its policy.
    expect((await optionErrorOfAsync(() => several.learn('api', { source: 'aimd' }))).message).to.equal(
      "fleetlimit: invalid option `lesson.policy`: got undefined; expected the name of a policy that learns: 'a', 'b' (this limiter has several).",
    )
    expect((await optionErrorOfAsync(() => several.learn('api', { source: 'aimd', policy: 'c' }))).option).to.equal(
      'lesson.policy',
    )
    expect((await optionErrorOfAsync(() => several.learned('api', 'c'))).option).to.equal('learned(key, policy)')
    expect(await several.learned('api')).to.equal(undefined)
    const slots = createRateLimiter({ concurrency: 2 })
    expect((await optionErrorOfAsync(() => slots.learn('api', { source: 'aimd' }))).message).to.equal(
      'fleetlimit: invalid option `lesson.policy`: got undefined; expected a limiter with a rate policy: in-flight slots and calendar periods learn no limit.',
    )
    expect(await slots.learned('api')).to.equal(undefined)
  })
})

describe('learned limits of a fleet on one Redis', () => {
  let redis: Redis
  before(() => {
    redis = redisClient()
  })
  after(() => redis.quit())

  it('a limit learned by one process holds in the other, which hears of it through the store', async () => {
    const prefix = uniquePrefix()
    const [one, two] = [0, 1].map(() =>
      createRateLimiter({ store: redisStore(redis, { prefix }), limit: 60, window: '1m', name: 'up' }),
    ) as [ReturnType<typeof createRateLimiter>, ReturnType<typeof createRateLimiter>]
    // The second caches "nothing learned" for a window; the store's message drops that.
    expect(await two.learned('api')).to.equal(undefined)
    const heard = new Promise<LearnedLimit | undefined>((resolve) =>
      two.on('learned', (_key, learned) => resolve(learned)),
    )
    // The second's subscription may be confirmed after the first write: learn again until it hears.
    await one.learn('api', { source: 'headers', limit: 20 })
    let learned = await two.learned('api')
    while (learned === undefined) {
      await one.learn('api', { source: 'headers', limit: 20 })
      learned = await two.learned('api')
    }
    expect(learned).to.deep.equal({ limit: 20, source: 'headers' })
    expect(await heard).to.deep.equal({ limit: 20, source: 'headers' })
    const peek = await two.peek('api')
    expect([peek.limit, peek.learned]).to.deep.equal([20, { limit: 20, source: 'headers' }])
    // Through the store, an AIMD cut by either is one cut: the second within the window keeps the first's.
    expect(await two.learn('api', { source: 'aimd' })).to.deep.equal({ limit: 14, source: 'aimd' })
    expect(await one.learn('api', { source: 'aimd' })).to.deep.equal({ limit: 14, source: 'aimd' })
  })
})
