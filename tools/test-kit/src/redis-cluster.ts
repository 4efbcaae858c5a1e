import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Redis } from 'ioredis'
import { freePort, type RedisServer, startRedisServer } from './redis-server.js'
import { sleep } from './sleep.js'

const run = promisify(execFile)

/** A Redis Cluster of real redis-server processes on 127.0.0.1, joined with `redis-cli --cluster create`. */
export interface RedisCluster {
  readonly nodes: RedisServer[]
  readonly startupNodes: { host: string; port: number }[]
  /** `redis-cli` with the given arguments, against the first node. */
  cli(...args: string[]): Promise<string>
  /** The master of a slot, as a live node (or the node on `askPort`) sees it. */
  masterOf(slot: number, askPort?: number): Promise<{ id: string; port: number; lowestSlot: number }>
  stop(): Promise<void>
}

/** Whether nothing listens on `port` of 127.0.0.1 now. */
async function isFree(port: number): Promise<boolean> {
  const server = createServer()
  server.listen(port, '127.0.0.1')
  const listening = await Promise.race([
    once(server, 'listening').then(() => true),
    once(server, 'error').then(() => false),
  ])
  server.close()
  return listening
}

/** `count` ports free now, each with its cluster bus port (port + 10 000) free too. */
async function freeNodePorts(count: number): Promise<number[]> {
  const ports: number[] = []
  while (ports.length < count) {
    const port = await freePort()
    if (ports.includes(port) || ports.includes(port - 10_000) || port + 10_000 >= 65_536) continue
    if (await isFree(port + 10_000)) ports.push(port)
  }
  return ports
}

/** A cluster node's options, its files in `dir`. */
function nodeArgs(dir: string, port: number): string[] {
  return [
    '--cluster-enabled',
    'yes',
    '--cluster-config-file',
    join(dir, `nodes-${port}.conf`),
    '--cluster-node-timeout',
    '1000',
    // While a dead master's slots wait for its replica, the other masters keep serving theirs.
    '--cluster-require-full-coverage',
    'no',
    // A replica's first sync starts at once, not after the default 5 s wait for more replicas.
    '--repl-diskless-sync-delay',
    '0',
    '--dir',
    dir,
  ]
}

export async function startRedisCluster({ masters = 3, replicasPerMaster = 1 } = {}): Promise<RedisCluster> {
  const dir = await mkdtemp(join(tmpdir(), 'fleetlimit-cluster-'))
  const count = masters * (1 + replicasPerMaster)
  // A node listens on its port and on its cluster bus port (port + 10 000); either may be taken meanwhile by another
  // process's connection, so a start that fails is tried again on other ports.
  let ports: number[] = []
  let nodes: RedisServer[] = []
  for (let attempt = 1; nodes.length === 0; attempt++) {
    ports = await freeNodePorts(count)
    const started = await Promise.allSettled(ports.map((port) => startRedisServer(nodeArgs(dir, port), { port })))
    const failed = started.find((result) => result.status === 'rejected')
    if (failed === undefined) {
      nodes = started.map((result) => (result as PromiseFulfilledResult<RedisServer>).value)
      break
    }
    await Promise.all(started.map((result) => (result.status === 'fulfilled' ? result.value.stop() : undefined)))
    if (attempt === 3) throw (failed as PromiseRejectedResult).reason
  }
  const addresses = ports.map((port) => `127.0.0.1:${port}`)
  await run('redis-cli', [
    '--cluster',
    'create',
    ...addresses,
    '--cluster-replicas',
    String(replicasPerMaster),
    '--cluster-yes',
  ])
  // Every node must agree the cluster is up before clients see a consistent map.
  for (const port of ports) {
    for (let i = 0; ; i++) {
      const { stdout } = await run('redis-cli', ['-p', String(port), 'cluster', 'info'])
      if (stdout.includes('cluster_state:ok')) break
      if (i > 200) throw new Error(`cluster node ${port} never reached cluster_state:ok`)
      await sleep(50)
    }
  }
  // A replica that never synced cannot be promoted: wait until each one's link to its master is up.
  for (const port of ports) {
    for (let i = 0; ; i++) {
      const { stdout } = await run('redis-cli', ['-p', String(port), 'info', 'replication'])
      if (stdout.includes('role:master') || stdout.includes('master_link_status:up')) break
      if (i > 200) throw new Error(`cluster replica ${port} never synced with its master`)
      await sleep(50)
    }
  }
  const first = ports[0] as number
  return {
    nodes,
    startupNodes: ports.map((port) => ({ host: '127.0.0.1', port })),
    async cli(...args) {
      const { stdout } = await run('redis-cli', ['-p', String(first), ...args])
      return stdout
    },
    async masterOf(slot, askPort) {
      const client = new Redis({
        port: askPort ?? nodes.find((n) => n.process.exitCode === null)?.port ?? first,
        lazyConnect: true,
      })
      try {
        const slots = await client.cluster('SLOTS')
        const master = slots.find(([from, to]) => slot >= from && slot <= to)?.[2]
        if (!master) throw new Error(`no master for slot ${slot}`)
        const lowestSlot = Math.min(...slots.filter((range) => range[2]?.[2] === master[2]).map(([from]) => from))
        return { id: master[2], port: master[1], lowestSlot }
      } finally {
        client.disconnect()
      }
    },
    async stop() {
      await Promise.all(nodes.map((node) => node.stop()))
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/** The Redis Cluster slot of a key, as fleetlimit computes it (checked against CLUSTER KEYSLOT in the cluster suite). */
export { clusterSlot as keySlot } from '../../../packages/core/src/store/cluster-slot.js'
