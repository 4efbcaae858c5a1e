import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRateLimiter, redisStore } from '@fleetlimit/core'
import { logUnits } from '@fleetlimit/test-kit/log-units'
import { freePort, type RedisServer, startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { sleep } from '@fleetlimit/test-kit/sleep'
import { expect } from 'chai'
import { Redis } from 'ioredis'

/** Starts a sentinel (the redis-server binary in sentinel mode) watching `primaryPort` as 'primary'. */
async function startSentinel(dir: string, primaryPort: number) {
  const port = await freePort()
  const config = join(dir, `sentinel-${port}.conf`)
  await writeFile(
    config,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor primary 127.0.0.1 ${primaryPort} 2`,
      'sentinel down-after-milliseconds primary 1000',
      'sentinel failover-timeout primary 10000',
      '',
    ].join('\n'),
  )
  const child = spawn('redis-server', [config, '--sentinel'], { stdio: ['ignore', 'pipe', 'ignore'] })
  // Listening once it says so on its log (stdout).
  let log = ''
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      log += chunk.toString()
      if (log.includes('+monitor master')) resolve()
    })
    child.once('exit', (code) => reject(new Error(`sentinel exited with ${code}: ${log}`)))
  })
  child.stdout.resume()
  return {
    port,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL')
        await once(child, 'exit')
      }
    },
  }
}

describe('Sentinel: a primary, a replica and three sentinels, started by the test', function () {
  this.timeout(90_000)
  let dir: string
  let primary: RedisServer
  let replica: RedisServer
  let sentinels: Awaited<ReturnType<typeof startSentinel>>[]

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fleetlimit-sentinel-'))
    primary = await startRedisServer(['--repl-diskless-sync-delay', '0'])
    replica = await startRedisServer(['--replicaof', '127.0.0.1', String(primary.port)])
    // Sentinels and WAIT need the replica in sync first: wait for its link to the primary to be up.
    const probe = new Redis({ port: replica.port })
    try {
      for (let i = 0; !(await probe.info('replication')).includes('master_link_status:up'); i++) {
        if (i > 500) throw new Error('the replica never synced with the primary')
        await sleep(20)
      }
    } finally {
      probe.disconnect()
    }
    sentinels = await Promise.all([0, 1, 2].map(() => startSentinel(dir, primary.port)))
  })
  after(async () => {
    await Promise.all([...sentinels.map((s) => s.stop()), primary.stop(), replica.stop()])
    await rm(dir, { recursive: true, force: true })
  })

  it('follows the new primary after a failover', async () => {
    const client = new Redis({
      sentinels: sentinels.map((s) => ({ host: '127.0.0.1', port: s.port })),
      name: 'primary',
    })
    client.on('error', () => {})
    try {
      // A connection error before 'ready' is retried by ioredis, so wait for 'ready' alone.
      await new Promise((resolve) => client.once('ready', resolve))
      const limiter = createRateLimiter({
        store: redisStore(client, { prefix: 'sentinel', breaker: { failureThreshold: 3, cooldownMs: 200 } }),
        limit: 1_000,
        window: '1m',
        onStoreError: 'fail-open',
        fallback: { limit: 100 },
        logger: { warn() {} },
      })
      for (let i = 0; i < 5; i++) expect((await limiter.consume('t')).source).to.equal('store')
      // The replica holds the window before the primary dies (WAIT: acknowledged by one replica).
      expect(await client.call('WAIT', 1, 5_000)).to.equal(1)
      const replicaClient = new Redis({ port: replica.port })
      expect(await logUnits(replicaClient, 'sentinel:1000-per-60000ms~sl3-60000:{t}')).to.equal(5)
      await primary.stop()
      const killedAt = performance.now()
      let decision = await limiter.consume('t')
      while (decision.source !== 'store' && performance.now() - killedAt < 60_000) {
        await sleep(50)
        decision = await limiter.consume('t')
      }
      expect(decision.source, 'decisions returned to the store').to.equal('store')
      const role = (await replicaClient.role())[0]
      expect(role, 'the replica was promoted').to.equal('master')
      expect(
        await logUnits(replicaClient, 'sentinel:1000-per-60000ms~sl3-60000:{t}'),
        'the window survived the failover',
      ).to.be.at.least(6)
      replicaClient.disconnect()
      console.log(
        `      (primary killed: first store decision on the promoted replica after ${Math.round(performance.now() - killedAt)} ms)`,
      )
    } finally {
      client.disconnect()
    }
  })
})
