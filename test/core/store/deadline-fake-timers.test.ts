import { createRateLimiter, isFleetlimitError, redisStore } from '@fleetlimit/core'
import { type RedisServer, startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { expect } from 'chai'
import type { Redis } from 'ioredis'
import sinon from 'sinon'
import { defaultClient, type FailureKind } from '../../support/faults.js'
import { uniquePrefix } from '../../support/redis.js'

/**
 * A call made while fake timers were installed (sinon's defaults fake setTimeout and setImmediate) arms the
 * deadline timer on the fake clock, which never runs once they are restored: later calls must still be given up
 * at their own deadline, on the real timers, while the server is frozen.
 */
describe('the deadline of calls made after fake timers were installed and restored (frozen redis-server)', () => {
  let server: RedisServer
  let client: Redis
  before(async () => {
    server = await startRedisServer()
    client = await defaultClient(server.url)
  })
  after(async () => {
    server.thaw()
    client.disconnect()
    await server.stop()
  })

  it('later calls fail at timeoutMs with the timeout outcome, before the server thaws', async () => {
    const store = redisStore(client, { prefix: uniquePrefix(), breaker: { failureThreshold: 1_000 } })
    const limiter = createRateLimiter({ store, limit: 10, window: '1m', local: false, timeoutMs: 100 })
    const failures: FailureKind[] = []
    limiter.on('storeError', (_error, kind) => failures.push(kind))
    expect((await limiter.consume('warm')).source, 'connected, script loaded').to.equal('store')

    server.freeze()
    const clock = sinon.useFakeTimers()
    const underFake = limiter.consume('t').then(
      () => 'decided',
      (error: unknown) => error,
    )
    clock.restore()
    const later = await Promise.all(
      Array.from({ length: 5 }, () =>
        limiter.consume('t').then(
          () => 'decided',
          (error: unknown) => error,
        ),
      ),
    )
    const first = await underFake
    // Every call settled while the server was still frozen: it cannot have answered any of them. The one made under
    // the fake timers is given up on the real ones too.
    for (const error of [first, ...later]) {
      expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE'), String(error)).to.equal(true)
      expect(String(error)).to.include('no answer within timeoutMs (100 ms)')
    }
    expect(failures).to.deep.equal(Array(6).fill('timeout'))
    server.thaw()
  })
})
