// In-flight limits across processes on a 3-master Redis Cluster, counted by the upstream the calls reach.

import { type RedisCluster, startRedisCluster } from '@fleetlimit/test-kit/redis-cluster'
import { expect } from 'chai'
import { IN_FLIGHT_SCENARIO, measureInFlight } from '../../bench/in-flight-fleet.js'
import { NO_RATE } from '../../bench/in-flight-fleetlimit.js'
import { IN_FLIGHT_PEERS, type InFlightPeer } from '../../bench/in-flight-peers.js'

describe('in-flight limits across processes on a 3-master Redis Cluster', function () {
  this.timeout(120_000)
  let cluster: RedisCluster

  before(async function () {
    this.timeout(60_000)
    cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 0 })
  })
  after(async () => {
    await cluster?.stop()
  })

  it('4 processes × 50 calls on a policy of 5: at most 5 in flight at the upstream, every call served', async () => {
    const fleetlimit = IN_FLIGHT_PEERS.find((p) => p.id === 'fleetlimit') as InFlightPeer
    const seeds = cluster.startupNodes.map(({ host, port }) => `${host}:${port}`).join(',')
    const alone = await measureInFlight(fleetlimit, `cluster:${seeds}`, { ...IN_FLIGHT_SCENARIO, limit: NO_RATE })
    expect(alone).to.deep.include({ completed: 200, failed: 0, refusals: 0, errors: {} })
    expect(alone.stats).to.deep.include({ served: 200, rejected: 0, maxInFlight: 5 })
  })
})
