import { once } from 'node:events'
import { createRateLimiter, redisStore } from '@fleetlimit/core'
import { type RedisCluster, startRedisCluster } from '@fleetlimit/test-kit/redis-cluster'
import { expect } from 'chai'
import { Cluster } from 'ioredis'
import { runCli } from '../support/cli.js'
import { uniquePrefix } from '../support/redis.js'

describe('the fleetlimit command line on a Redis Cluster (--cluster seeds)', function () {
  this.timeout(120_000)
  let cluster: RedisCluster
  let client: Cluster

  before(async function () {
    this.timeout(60_000)
    cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 0 })
    client = new Cluster(cluster.startupNodes)
    client.on('error', () => {})
    await once(client, 'ready')
  })
  after(async () => {
    client?.disconnect()
    await cluster?.stop()
  })

  it('keys scans every master; peek and reset find a tenant’s key on whichever master holds it', async () => {
    const prefix = uniquePrefix()
    const limiter = createRateLimiter({ store: redisStore(client, { prefix }), name: 'api', limit: 5, window: '1m' })
    const tenants = Array.from({ length: 12 }, (_, i) => `tenant-${i}`)
    for (const [i, tenant] of tenants.entries()) {
      for (let n = 0; n <= i % 3; n++) await limiter.consume(tenant)
    }
    const masters = client.nodes('master')
    const holding = await Promise.all(masters.map((node) => node.dbsize()))
    expect(holding.filter((count) => count > 0).length, 'the keys are spread over masters').to.be.above(1)

    // Seeds as host:port, one of them only: the client finds the other masters.
    const seeds = ['--cluster', `127.0.0.1:${cluster.startupNodes[0]?.port}`]
    const listed = await runCli(['keys', '--json', '--prefix', prefix, ...seeds])
    expect(listed.stderr).to.equal('')
    const { keys } = JSON.parse(listed.stdout) as { keys: { tenant: string; used: number }[] }
    // Sorted by Redis key: `{tenant-10}` before `{tenant-1}`, as '0' sorts before '}'.
    const expected = tenants.map((tenant, i) => [tenant, (i % 3) + 1] as const)
    expected.sort(([a], [b]) => (`{${a}}` < `{${b}}` ? -1 : 1))
    expect(keys.map(({ tenant, used }) => [tenant, used])).to.deep.equal(expected)

    const policy = ['--policy', 'api', '--window', '1m', '--prefix', prefix, ...seeds]
    const peek = JSON.parse((await runCli(['peek', 'tenant-5', '--json', ...policy])).stdout) as { used: number }
    expect(peek.used).to.equal(3)
    const reset = await runCli(['reset', 'tenant-5', ...policy])
    expect(reset.stdout).to.equal(
      `reset ${prefix}:api~sl3-60000:{tenant-5}: 3 units forgotten; every process asks Redis again\n`,
    )
    expect((await limiter.peek('tenant-5')).remaining).to.equal(5)
  })
})
