// Handover part: how soon a slot of an in-flight policy released in one process is taken by a waiter in another,
// and what waiting costs Redis. Each round, this process holds the policy's one slot, a forked process's acquire()
// waits for it (its first decision was denied), and this process releases it: the time from just before release()
// to the waiter's admission (wall clock, one machine) beside the round trip of a PING on the same server and the
// time a PUBLISH from this process takes to be heard in the waiting one (the floor of any wake-up). Then, with
// the slot held, 4, 20 and then 100 waiters (spread over 4 processes) wait 3 s: the commands Redis ran per second
// meanwhile (INFO commandstats, less the INFO and CONFIG calls of the measurement itself).
import { type ChildProcess, fork } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { createRateLimiter, definePolicy, redisStore } from '@fleetlimit/core'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { sleep } from '@fleetlimit/test-kit/sleep'
import { Redis } from 'ioredis'
import type { HandoverMessage } from './handover-worker.js'
import type { PartResult } from './run.js'

const wallNow = () => performance.timeOrigin + performance.now()

function quantile(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number
}

const workerPath = fileURLToPath(new URL('./handover-worker.ts', import.meta.url))

interface Worker {
  readonly child: ChildProcess
  next(type: string): Promise<{ type: string; at?: number }>
  send(message: HandoverMessage): void
}

/** A forked waiter process whose messages are read in order, one per next(). */
function startWorker(): Worker {
  const child = fork(workerPath, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const inbox: { type: string; at?: number }[] = []
  const readers: ((m: { type: string; at?: number }) => void)[] = []
  child.on('message', (message: { type: string; at?: number }) => {
    const reader = readers.shift()
    if (reader) reader(message)
    else inbox.push(message)
  })
  return {
    child,
    async next(type) {
      const message = inbox.shift() ?? (await new Promise<{ type: string; at?: number }>((r) => readers.push(r)))
      if (message.type !== type) throw new Error(`expected ${type} from a handover worker, got ${message.type}`)
      return message
    },
    send: (message) => child.send(message),
  }
}

export async function handover({ rounds = 300, waitMs = 3_000 } = {}): Promise<PartResult> {
  const server = await startRedisServer()
  const admin = new Redis(server.url)
  const prefix = 'handover'
  const client = new Redis(server.url)
  const limiter = createRateLimiter({
    store: redisStore(client, { prefix }),
    policies: [definePolicy({ name: 'handover', concurrency: 1 })],
  })
  const workers: Worker[] = []
  try {
    // The round trip: a PING on a connection of its own.
    const pings: number[] = []
    for (let i = 0; i < 1_000; i++) {
      const at = performance.now()
      await admin.ping()
      pings.push(performance.now() - at)
    }
    pings.sort((a, b) => a - b)

    for (let i = 0; i < 4; i++) workers.push(startWorker())
    for (const worker of workers) worker.send({ type: 'setup', redisUrl: server.url, prefix })
    await Promise.all(workers.map((w) => w.next('ready')))
    const [waiter] = workers as [Worker]

    // The floor of a wake-up in another process: a PUBLISH from here, heard there.
    waiter.send({ type: 'listen', channel: 'handover-probe' })
    await waiter.next('listening')
    const messages: number[] = []
    for (let round = 0; round < rounds; round++) {
      const sentAt = wallNow()
      await admin.publish('handover-probe', 'x')
      const { at } = await waiter.next('heard')
      messages.push((at as number) - sentAt)
    }
    messages.sort((a, b) => a - b)

    const handovers: number[] = []
    for (let round = 0; round < rounds; round++) {
      const held = await limiter.consume('k')
      if (!held.allowed) throw new Error('the slot was not free at the start of a round')
      waiter.send({ type: 'wait', waiters: 1, hold: false })
      await waiter.next('waiting')
      // The waiter's denial is in; let its queue go to sleep on it.
      await sleep(2)
      const releasedAt = wallNow()
      await limiter.release(held)
      const { at } = await waiter.next('admitted')
      handovers.push((at as number) - releasedAt)
    }
    handovers.sort((a, b) => a - b)

    const load: { waiters: number; perSecond: number }[] = []
    // Spread evenly over the 4 processes.
    for (const waiters of [4, 20, 100]) {
      const held = await limiter.consume('k')
      for (const worker of workers) worker.send({ type: 'wait', waiters: waiters / workers.length, hold: false })
      await Promise.all(workers.map((w) => w.next('waiting')))
      await admin.config('RESETSTAT')
      const start = performance.now()
      await sleep(waitMs)
      const stats = await admin.info('commandstats')
      const seconds = (performance.now() - start) / 1_000
      let calls = 0
      for (const [, name, n] of stats.matchAll(/cmdstat_([a-z|]+):calls=(\d+)/g)) {
        if (name !== 'info' && name !== 'config|resetstat') calls += Number(n)
      }
      load.push({ waiters, perSecond: calls / seconds })
      // Every waiter is admitted in turn (each releases at once): the next measurement starts from none.
      await limiter.release(held)
      for (const worker of workers) for (let i = 0; i < waiters / workers.length; i++) await worker.next('admitted')
    }

    const data = {
      rounds,
      handoverMs: { median: quantile(handovers, 0.5), p99: quantile(handovers, 0.99), max: handovers.at(-1) },
      pingMs: { median: quantile(pings, 0.5), p99: quantile(pings, 0.99) },
      messageMs: { median: quantile(messages, 0.5), p99: quantile(messages, 0.99) },
      commandsPerSecondWhileWaiting: load,
    }
    const f = (n: number) => n.toFixed(2)
    const markdown = [
      `From \`release()\` in one process to \`acquire()\`'s admission in another, ${rounds} rounds, one redis-server:`,
      '',
      '| | median | p99 |',
      '|---|---|---|',
      `| handover | ${f(data.handoverMs.median)} ms | ${f(data.handoverMs.p99)} ms |`,
      `| a PUBLISH here, heard in the other process | ${f(data.messageMs.median)} ms | ${f(data.messageMs.p99)} ms |`,
      `| PING round trip | ${f(data.pingMs.median)} ms | ${f(data.pingMs.p99)} ms |`,
      '',
      `Commands Redis ran per second while waiters waited ${waitMs / 1_000} s on a full key (4 processes):`,
      '',
      '| waiters | commands per second |',
      '|---|---|',
      ...load.map(({ waiters, perSecond }) => `| ${waiters} | ${perSecond.toFixed(1)} |`),
      '',
    ].join('\n')
    return { title: 'Handover of an in-flight slot between processes', markdown, data }
  } finally {
    for (const worker of workers) worker.child.kill()
    await Promise.all(workers.map((w) => (w.child.exitCode === null ? once(w.child, 'exit') : undefined)))
    admin.disconnect()
    client.disconnect()
    await server.stop()
  }
}
