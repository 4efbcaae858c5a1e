// Cluster part: the time from the death of the master that holds a hot key to the first decision made by the
// store again, on its promoted replica; meanwhile a fail-open policy decides under its fallback limit.
import { once } from 'node:events'
import { createRateLimiter, redisStore } from '@fleetlimit/core'
import { keySlot, startRedisCluster } from '@fleetlimit/test-kit/redis-cluster'
import { sleep } from '@fleetlimit/test-kit/sleep'
import { Cluster } from 'ioredis'
import type { PartResult } from './run.js'

const CALLERS = 8
const TIMEOUT_MS = 200
const NODE_TIMEOUT_MS = 1_000 // the cluster's cluster-node-timeout (tools/test-kit/src/redis-cluster.ts)

/** One trial on a new cluster: kill the hot key's master under load, time each phase until the store decides again. */
async function trial() {
  const cluster = await startRedisCluster()
  const client = new Cluster(cluster.startupNodes) // ioredis defaults
  client.on('error', () => {})
  client.on('node error', () => {})
  try {
    await once(client, 'ready')
    const limiter = createRateLimiter({
      store: redisStore(client),
      limit: 1_000_000,
      window: '1m',
      timeoutMs: TIMEOUT_MS,
      onStoreError: 'fail-open',
      fallback: { limit: 1_000 },
      local: false,
      logger: { warn() {} },
    })
    const dying = await cluster.masterOf(keySlot('{hot}'))
    // A tenant on another master: how many of its decisions the outage of the first one costs.
    let j = 0
    while ((await cluster.masterOf(keySlot(`{other-${j}}`))).id === dying.id) j++
    const other = `other-${j}`
    let otherDecisions = 0
    let otherWithoutStore = 0
    let killedAt = Number.POSITIVE_INFINITY
    let firstWithoutStore: number | undefined
    let backAt: number | undefined
    let slowestMs = 0
    let running = true
    const caller = async () => {
      while (running) {
        const sentAt = performance.now()
        const { source } = await limiter.consume('hot')
        const now = performance.now()
        if (sentAt >= killedAt) slowestMs = Math.max(slowestMs, now - sentAt)
        if (source !== 'store' && now >= killedAt) firstWithoutStore ??= now
        if (source === 'store' && firstWithoutStore !== undefined) backAt ??= now
        const otherSource = (await limiter.consume(other)).source
        if (now >= killedAt && backAt === undefined) {
          otherDecisions++
          if (otherSource !== 'store') otherWithoutStore++
        }
        await new Promise((resolve) => setImmediate(resolve))
      }
    }
    const callers = Array.from({ length: CALLERS }, caller)
    await sleep(500)
    killedAt = performance.now()
    await cluster.nodes.find((node) => node.port === dying.port)?.stop()
    while (backAt === undefined && performance.now() - killedAt < 30_000) {
      await sleep(10)
    }
    running = false
    await Promise.all(callers)
    // Nodes learn of the failover by gossip, some after the client has: ask again for up to 5 s.
    let promoted = false
    const askUntil = performance.now() + 5_000
    while (!promoted && performance.now() < askUntil) {
      promoted = (await cluster.masterOf(keySlot('{hot}'))).id !== dying.id
      if (!promoted) await sleep(50)
    }
    return {
      promoted,
      firstWithoutStoreMs: firstWithoutStore === undefined ? null : firstWithoutStore - killedAt,
      backToStoreMs: backAt === undefined ? null : backAt - killedAt,
      slowestDecisionMs: slowestMs,
      degraded: limiter.stats().degraded,
      otherTenant: { decisions: otherDecisions, withoutStore: otherWithoutStore },
    }
  } finally {
    client.disconnect()
    await cluster.stop()
  }
}

export async function clusterFailover({ trials = 3 } = {}): Promise<PartResult> {
  const results = []
  for (let i = 0; i < trials; i++) results.push(await trial())
  const ms = (n: number | null) => (n === null ? 'never' : n.toFixed(0))
  const markdown = [
    `Three masters with one replica each (cluster-node-timeout ${NODE_TIMEOUT_MS} ms), a default ioredis Cluster client,`,
    `${CALLERS} concurrent callers on one hot key; fail-open policy with a fallback limit, timeoutMs ${TIMEOUT_MS}.`,
    '',
    '| trial | replica promoted | first decision without the store (ms after the kill) | first store decision again (ms after the kill) | slowest decision (ms) | decisions without the store | a tenant on a live master meanwhile: decisions, without the store |',
    '|---|---|---|---|---|---|---|',
    ...results.map(
      (r, i) =>
        `| ${i + 1} | ${r.promoted ? 'yes' : 'no'} | ${ms(r.firstWithoutStoreMs)} | ${ms(r.backToStoreMs)} | ${r.slowestDecisionMs.toFixed(0)} | ${r.degraded} | ${r.otherTenant.decisions}, ${r.otherTenant.withoutStore} |`,
    ),
    '',
  ].join('\n')
  return { title: 'Cluster: a master dies, its replica takes over', markdown, data: results }
}
