import { memoryStore, redisStore } from '@fleetlimit/core'
import { expect } from 'chai'
import type { Redis } from 'ioredis'
import { isFleetlimitError } from '../../../packages/core/src/common/errors.js'
import { DeadlineExceeded } from '../../../packages/core/src/store/guarded-call.js'
import { serversOf } from '../../../packages/core/src/store/server-set.js'
import { redisClient, uniquePrefix } from '../../support/redis.js'

describe('redisStore (ioredis)', () => {
  let client: Redis
  beforeEach(() => {
    client = redisClient()
  })
  afterEach(() => client.disconnect())

  it('refuses a prefix with whitespace, braces, or none, naming the option', () => {
    for (const prefix of ['', 'a b', '{tag}', 'x'.repeat(65)]) {
      let error: unknown
      try {
        redisStore(client, { prefix })
      } catch (thrown) {
        error = thrown
      }
      expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION'), JSON.stringify(prefix)).to.equal(true)
      expect((error as Error).message, JSON.stringify(prefix)).to.include('redisStore.prefix')
    }
  })

  it('has guards (breaker, calls in flight) beside it; the memory store has none', () => {
    const store = redisStore(client)
    expect(serversOf(store)?.state).to.equal('closed')
    expect(serversOf(memoryStore())).to.equal(undefined)
  })

  it('records a consume with a deadline still ahead, and nothing for one past it', async () => {
    const store = redisStore(client, { prefix: uniquePrefix() })
    const request = { key: 'k', limit: 10, windowMs: 60_000, cost: 3 }
    // The first reply teaches the store the server's clock; a deadline then goes to the script in that clock.
    const [first] = await store.consume([request], { at: performance.now() + 1_000 })
    expect([first?.allowed, first?.remaining]).to.deep.equal([true, 7])
    const late = await store.consume([request], { at: performance.now() - 50 }).catch((error: unknown) => error)
    expect(late).to.be.instanceOf(DeadlineExceeded)
    expect((late as Error).message).to.equal(
      'fleetlimit: the call reached Redis after its deadline: nothing was recorded',
    )
    const [after] = await store.peek([request])
    expect(after?.remaining, 'the late call recorded nothing').to.equal(7)
  })

  it('records a consume sent with no deadline whenever it runs', async () => {
    const store = redisStore(client, { prefix: uniquePrefix() })
    const request = { key: 'k', limit: 10, windowMs: 60_000, cost: 4 }
    const [result] = await store.consume([request])
    expect([result?.allowed, result?.remaining, result?.retryAfterMs]).to.deep.equal([true, 6, 0])
    const [after] = await store.peek([request])
    expect(after?.remaining).to.equal(6)
  })
})
