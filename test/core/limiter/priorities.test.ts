import {
  createRateLimiter,
  type Decision,
  isFleetlimitError,
  memoryStore,
  redisStore,
  type Store,
} from '@fleetlimit/core'
import { expect } from 'chai'
import type { HoldRequest } from '../../../packages/core/src/store/store.js'
import { redisClient, uniquePrefix } from '../../support/redis.js'
import { storeKinds, useStoreClients } from '../../support/stores.js'

const classes = [
  { name: 'interactive', share: 0.7 },
  { name: 'batch', share: 0.3 },
]

/** `store`, with each hold it makes announced once applied: the deterministic signal a waiter's hold is in place. */
function watchHolds(store: Store) {
  const holds: { requests: readonly HoldRequest[]; ms: number }[] = []
  let next: (() => void) | undefined
  const watched = new Proxy(store, {
    get(target, property, receiver) {
      if (property !== 'hold') return Reflect.get(target, property, receiver)
      return async (requests: readonly HoldRequest[], ms: number) => {
        await target.hold(requests, ms)
        holds.push({ requests, ms })
        next?.()
      }
    },
  })
  const held = () =>
    new Promise<void>((resolve) => {
      next = resolve
    })
  return { store: watched, holds, held }
}

/** An acquire left waiting, with what it ended with once aborted. */
function waiter(promise: Promise<Decision>, controller: AbortController) {
  const ended = promise.then(
    (decision) => ({ decision }),
    (error: unknown) => ({ error }),
  )
  return { ended, abort: () => controller.abort(new Error('test over')) }
}

describe('priority classes: shares held fleet-wide while a higher class waits', () => {
  useStoreClients()

  for (const kind of storeKinds.filter((k) => k.name === 'memoryStore' || k.name === 'redisStore')) {
    describe(kind.name, () => {
      it('an unheld class borrows the whole limit; a higher class’s waiter holds it to its share in a second limiter, until the hold ends', async () => {
        const base = kind.make()
        const { store, holds, held } = watchHolds(base)
        const options = { limit: 10, window: '1m' as const, priorities: classes, local: false as const }
        const first = createRateLimiter({ store, ...options })
        // A second limiter on the same store: another process, which makes no hold itself.
        const second = createRateLimiter({ store: base, ...options })
        for (let i = 0; i < 9; i++) {
          expect(await second.consume('t', { priority: 'batch' }), `batch ${i}`).to.include({ allowed: true })
        }
        expect(await second.peek('t', { priority: 'batch' })).to.include({ allowed: true, remaining: 1 })
        expect(await first.consume('t', { priority: 'interactive' })).to.include({ allowed: true, remaining: 0 })
        const controller = new AbortController()
        const holding = held()
        const wait = waiter(first.acquire('t', { priority: 'interactive', signal: controller.signal }), controller)
        await holding
        // One hold, on batch's share alone (interactive holds 1 of its 7: only lower classes), for the waiter's
        // wait (about a window) and the margin (a tenth of the window).
        expect(holds).to.have.length(1)
        const [hold] = holds as [{ requests: readonly HoldRequest[]; ms: number }]
        expect(hold.requests.map((r) => r.key)).to.deep.equal([await keyOf(second, 'batch')])
        expect(hold.ms).to.be.within(60_000 - 1_000, 66_000)
        wait.abort()
        expect(await wait.ended).to.have.property('error')
        // The hold is in the store: the second limiter sees batch capped to its 3 (its 9 units are over it), with
        // the wait until the hold ends or its units leave, whichever is first.
        const denied = await second.consume('t', { priority: 'batch' })
        expect(denied).to.include({ allowed: false, priority: 'batch' })
        expect(denied.retryAfterMs).to.be.within(60_000 - 1_000, hold.ms)
        expect(await second.peek('t', { priority: 'batch' })).to.include({ allowed: false, remaining: 0 })
        // A reset of the key ends the shares' holds with their units: batch borrows again.
        await first.reset('t')
        expect(await second.consume('t', { priority: 'batch' })).to.include({ allowed: true, remaining: 9 })
      })

      it('10,000 concurrent calls of two classes while batch is held: exactly the limit admitted, batch exactly its share', async () => {
        const { store, held } = watchHolds(kind.make())
        // A deadline that 10,000 calls in one burst meet on a busy machine.
        const limiter = createRateLimiter({
          store,
          limit: 100,
          window: '1m',
          priorities: classes,
          local: false,
          timeoutMs: '20s',
        })
        // An interactive waiter under a limit of 1 (its share of it is 0 units, so it holds batch alone).
        await limiter.consume('t', { priority: 'interactive' })
        const controller = new AbortController()
        const holding = held()
        const wait = waiter(
          limiter.acquire('t', { priority: 'interactive', limit: 1, signal: controller.signal }),
          controller,
        )
        await holding
        wait.abort()
        await wait.ended
        const calls = Array.from({ length: 10_000 }, (_, i) =>
          limiter.consume('t', { priority: i % 2 === 0 ? 'interactive' : 'batch' }),
        )
        const decisions = await Promise.all(calls)
        const count = (priority: string) => decisions.filter((d) => d.allowed && d.priority === priority).length
        expect(count('interactive') + count('batch'), 'the limit, less the first call').to.equal(99)
        expect(count('batch'), 'batch’s share: floor(0.3 * 100)').to.equal(30)
        expect(count('interactive')).to.equal(69)
      })

      it('the waiting higher class is admitted before the lower one takes more than its share, across two limiters', async function () {
        this.timeout(10_000)
        const base = kind.make()
        const options = { limit: 4, window: '300ms' as const, priorities: classes, local: false as const }
        const interactive = createRateLimiter({ store: base, ...options })
        const batch = createRateLimiter({ store: base, ...options })
        for (let i = 0; i < 4; i++) expect((await batch.consume('t', { priority: 'batch' })).allowed).to.equal(true)
        // Batch keeps 12 waiters; interactive arrives with one, denied until batch's units leave the window.
        const order: string[] = []
        const batchWaits = Array.from({ length: 12 }, () =>
          batch.acquire('t', { priority: 'batch', maxWaitMs: 5_000 }).then(() => order.push('batch')),
        )
        const first = await interactive.acquire('t', { priority: 'interactive', maxWaitMs: 5_000 })
        order.push('interactive')
        expect(first).to.include({ allowed: true, priority: 'interactive' })
        // Before the interactive call, batch got at most its share of the window its units left (floor(0.3 * 4)).
        expect(order.indexOf('interactive'), order.join(' ')).to.be.at.most(1)
        await Promise.all(batchWaits)
        expect(order.filter((o) => o === 'batch')).to.have.length(12)
      })
    })
  }

  it('a share key of the wrong type on Redis fails its own tenant’s calls alone, not another tenant’s', async () => {
    const redis = redisClient()
    try {
      const prefix = uniquePrefix()
      const limiter = createRateLimiter({
        store: redisStore(redis, { prefix }),
        limit: 10,
        window: '1m',
        priorities: classes,
      })
      await limiter.consume('spoiled', { priority: 'batch' })
      const [shareKey] = await redis.keys(`${prefix}:*~p-batch*`)
      expect(shareKey, 'the batch share key of tenant spoiled').to.be.a('string')
      await redis.del(shareKey as string)
      await redis.lpush(shareKey as string, 'not a log')
      const outcomes = await Promise.all(
        ['spoiled', 'fine', 'spoiled', 'fine'].map((tenant) =>
          limiter.consume(tenant, { priority: 'batch' }).then(
            (d) => `${tenant} ${d.allowed ? 'admitted' : 'denied'}`,
            (error: unknown) => `${tenant} ${isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE') ? 'store error' : error}`,
          ),
        ),
      )
      expect(outcomes).to.deep.equal(['spoiled store error', 'fine admitted', 'spoiled store error', 'fine admitted'])
      expect(limiter.breakerState).to.equal('closed')
    } finally {
      await redis.quit()
    }
  })

  it('a slow event loop: a waiter woken after its hold ended is denied if the room was taken, holds again, and is admitted', async () => {
    const { store, holds, held } = watchHolds(memoryStore())
    const limiter = createRateLimiter({ store, limit: 10, window: '500ms', priorities: classes, local: false })
    for (let i = 0; i < 9; i++) await limiter.consume('t', { priority: 'batch' })
    expect(await limiter.consume('t', { priority: 'interactive' })).to.include({ allowed: true, remaining: 0 })
    const holding = held()
    const admitted = limiter.acquire('t', { priority: 'interactive' })
    await holding
    // Its hold covers its wait (until the units leave, 500 ms) and a margin of 50 ms.
    expect(holds.map((h) => h.requests.length)).to.deep.equal([1])
    expect(holds[0]?.ms).to.be.within(450, 550)
    // The loop is busy past the waiter's timer and its hold: nothing of this process runs meanwhile.
    const busyUntil = performance.now() + 800
    while (performance.now() < busyUntil) {}
    // Batch calls that run before the waiter's late timer (as another process's would) find the hold ended and
    // the window empty: batch borrows the whole limit, at one instant. A memory store decides within consume().
    const batch = [limiter.consume('t', { priority: 'batch', cost: 10 }), limiter.consume('t', { priority: 'batch' })]
    expect((await Promise.all(batch)).map((d) => d.allowed)).to.deep.equal([true, false])
    // The waiter wakes, is denied (the room is taken), holds batch again for its new wait, and is admitted when the
    // batch units leave: then the window holds its one unit. (A timer that fires a fraction of a ms before the
    // units leave is denied once more, for that fraction, with one more hold.)
    const decision = await admitted
    expect(decision).to.include({ allowed: true, priority: 'interactive', remaining: 9 })
    expect(holds.length, 'holds: the first, the one after the late wake, and at most one more').to.be.within(2, 3)
    expect(holds[1]?.ms, 'the second hold: the wait until the batch units leave, and its margin').to.be.within(450, 550)
  })

  it('a peek of a class reports its answer; a refund and a reset take back its share units too (memory store, injected clock)', async () => {
    let now = 0
    const store = memoryStore({ clock: () => now })
    const limiter = createRateLimiter({ store, limit: 10, window: 1_000, priorities: classes, local: false })
    const admitted = await limiter.consume('t', { priority: 'batch', cost: 3 })
    expect(admitted).to.include({ allowed: true, remaining: 7, priority: 'batch' })
    // Batch's share key holds the 3 units: held, it has room for none.
    const batchKey = (await keyOf(limiter, 'batch')) as string
    await store.hold([{ key: batchKey, windowMs: 1_000 }], 500)
    now = 100
    expect(await limiter.peek('t', { priority: 'batch' })).to.deep.include({
      allowed: false,
      remaining: 0,
      retryAfterMs: 400,
      priority: 'batch',
    })
    expect(await limiter.peek('t', { priority: 'interactive' })).to.deep.include({
      allowed: true,
      remaining: 7,
      priority: 'interactive',
    })
    expect(await limiter.refund(admitted)).to.deep.equal({ units: 3, outcome: 'refunded' })
    // Held, batch is admitted again: its 3 units are gone from its share too (the answer's remaining is the limit's).
    expect(await limiter.peek('t', { priority: 'batch' })).to.deep.include({ allowed: true, remaining: 10 })
    // Exactly the share while held: 3 admitted, the 4th waits for the hold's end (at 500).
    for (let i = 0; i < 3; i++) expect((await limiter.consume('t')).allowed).to.equal(true)
    expect(await limiter.consume('t')).to.include({ allowed: false, retryAfterMs: 400 })
    now = 500
    expect(await limiter.consume('t')).to.include({ allowed: true, remaining: 6 })
    await limiter.reset('t')
    expect(await limiter.peek('t', { priority: 'batch' })).to.include({ allowed: true, remaining: 10 })
  })
})

/** The store key of a class's share window for tenant 't', as the limiter builds it. */
async function keyOf(limiter: ReturnType<typeof createRateLimiter>, className: string): Promise<string | undefined> {
  const [policy] = limiter.policies
  const { policyKeyName } = await import('../../../packages/core/src/limiter/policy.js')
  const { shareKeyName } = await import('../../../packages/core/src/limiter/priority-classes.js')
  return policy ? `${shareKeyName(policyKeyName(policy), className)}:{t}` : undefined
}
