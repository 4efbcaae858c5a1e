// In-flight limits across processes on one Redis, counted by the upstream the calls reach: 4 processes × 50 calls
// of 20-200 ms on a policy of 5 never have more than 5 in flight there; the slots of a process killed with SIGKILL
// come back at their expiry. Throughput, and a rate beside the in-flight limit (which the upstream counts at arrival,
// after a transit that a loaded machine stretches), are measured by `pnpm bench in-flight`.
import { fork } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { createRateLimiter, definePolicy, redisStore } from '@fleetlimit/core'
import { expect } from 'chai'
import { Redis } from 'ioredis'
import { IN_FLIGHT_SCENARIO, measureInFlight } from '../../bench/in-flight-fleet.js'
import { NO_RATE } from '../../bench/in-flight-fleetlimit.js'
import { IN_FLIGHT_PEERS, type InFlightPeer } from '../../bench/in-flight-peers.js'
import { childMessages } from '../support/child-messages.js'
import { uniquePrefix } from '../support/redis.js'
import { redisUrl } from '../support/root-hooks.js'

const fleetlimit = IN_FLIGHT_PEERS.find((p) => p.id === 'fleetlimit') as InFlightPeer

describe('in-flight limits across processes (one Redis)', function () {
  this.timeout(120_000)

  it('4 processes × 50 calls on a policy of 5: at most 5 in flight at the upstream, every call served', async () => {
    const result = await measureInFlight(fleetlimit, redisUrl(), { ...IN_FLIGHT_SCENARIO, limit: NO_RATE })
    expect(result).to.deep.include({ tasks: 200, completed: 200, failed: 0, unfinished: 0, refusals: 0, errors: {} })
    expect(result.stats).to.deep.include({ served: 200, rejected: 0, inFlight: 0, maxInFlight: 5 })
  })

  it('a process killed with SIGKILL while it holds 3 slots: another process gets them by their expiry', async () => {
    const prefix = uniquePrefix()
    const slotTtlMs = 1_000
    const child = fork(fileURLToPath(new URL('../support/slot-holder.ts', import.meta.url)), {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    const messages = childMessages(child)
    child.send({ redisUrl: redisUrl(), prefix, concurrency: 3, slotTtlMs })
    expect(await messages.next()).to.deep.equal({ held: 3 })
    const client = new Redis(redisUrl())
    try {
      const limiter = createRateLimiter({
        store: redisStore(client, { prefix }),
        policies: [definePolicy({ name: 'parallel', concurrency: 3, slotTtlMs })],
      })
      child.kill('SIGKILL')
      await once(child, 'exit')
      const denied = await limiter.consume('acme')
      expect(denied.allowed).to.equal(false)
      expect(denied.retryAfterMs).to.be.within(1, slotTtlMs)
      // Each waiter's deadline is the slots' life plus 100 ms from the kill: the store's wait wakes them in time.
      const admitted = await Promise.all([1, 2, 3].map(() => limiter.acquire('acme', { maxWaitMs: slotTtlMs + 100 })))
      expect(admitted.map((d) => d.allowed)).to.deep.equal([true, true, true])
      expect((await limiter.consume('acme')).allowed).to.equal(false)
    } finally {
      client.disconnect()
    }
  })
})
