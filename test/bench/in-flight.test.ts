// The in-flight part's measuring stick: the seeded work, a perfect limiter's schedule, and the fleet run with
// each peer at a small size, counted by the stub upstream.
import { expect } from 'chai'
import { inFlight } from '../../bench/in-flight.js'
import {
  IN_FLIGHT_SCENARIO,
  type InFlightScenario,
  measureInFlight,
  perfectScheduleMs,
  seededHolds,
} from '../../bench/in-flight-fleet.js'
import { IN_FLIGHT_PEERS, type InFlightPeer } from '../../bench/in-flight-peers.js'
import { redisUrl } from '../support/root-hooks.js'

// 20 calls, far below the rate limit: only the in-flight limit can refuse one.
const SMALL: InFlightScenario = { ...IN_FLIGHT_SCENARIO, tasksPerWorker: 5 }
const peer = (id: string) => IN_FLIGHT_PEERS.find((p) => p.id === id) as InFlightPeer

describe('bench in-flight', () => {
  it('the holds: the same seeded sequence every time, whole ms from 20 to 200', () => {
    const holds = seededHolds(32, 200)
    expect(seededHolds(32, 200)).to.deep.equal(holds)
    expect(holds.every((h) => Number.isInteger(h) && h >= 20 && h <= 200)).to.equal(true)
    expect(seededHolds(33, 200)).to.not.deep.equal(holds)
  })

  it('a perfect schedule: a call starts when a slot is free and the window has room', () => {
    const scenario = { ...IN_FLIGHT_SCENARIO, workers: 1, tasksPerWorker: 4, concurrency: 2, limit: 3, windowMs: 1_000 }
    // Two start at 0, the third when the 50 ms call ends, the fourth once the window has left the first at 1 000.
    expect(perfectScheduleMs([100, 50, 100, 100], scenario)).to.equal(1_100)
    // Two workers' queues interleave: worker 0's first, worker 1's first, worker 0's second, ...
    const two = { ...scenario, workers: 2, tasksPerWorker: 2, limit: 10 }
    expect(perfectScheduleMs([10, 300, 20, 40], two)).to.equal(310)
  })

  it('redis-semaphore: 4 processes × 5 calls, never more than 5 in flight at the upstream', async function () {
    this.timeout(60_000)
    const result = await measureInFlight(peer('redis-semaphore'), redisUrl(), SMALL)
    expect(result).to.deep.include({ tasks: 20, completed: 20, failed: 0, unfinished: 0, refusals: 0, errors: {} })
    expect(result.stats).to.deep.include({ served: 20, rejected: 0, inFlight: 0, maxRequestsInWindow: 20 })
    expect(result.stats.maxInFlight).to.be.within(1, 5)
  })

  it('the part at a small size: a row per peer, each with the upstream’s counts', async function () {
    this.timeout(90_000)
    const { markdown, data } = await inFlight({ scenario: SMALL })
    const { rows } = data as { rows: { limiter: string; completed: number; wallMs: number; throughput: number }[] }
    expect(rows.map((r) => [r.limiter, r.completed])).to.deep.equal(IN_FLIGHT_PEERS.map((p) => [p.id, 20]))
    for (const row of rows) expect(Number.isFinite(row.throughput) && row.wallMs > 0, row.limiter).to.equal(true)
    for (const { name } of IN_FLIGHT_PEERS) expect(markdown).to.include(name)
  })
})
