// One process of the priorities fleet: from the common start until the end, `batchLoops` loops each call the
// upstream as the batch class, one call after the other, and (in the processes that have them) an interactive call
// starts every `interactiveEveryMs`. Through limitedFetch with `priority`, or through Bottleneck's Redis clustering
// with its per-process `priority`. Each interactive call's wait for admission is reported. Started by
// outbound-priorities.ts with fork().

import { createRateLimiter, limitedFetch, redisStore } from '@fleetlimit/core'
import { sleep } from '@fleetlimit/test-kit/sleep'
import { Redis } from 'ioredis'
import { clusteredReservoir } from './bottleneck-reservoir.js'
import { countErrors, send, startRun } from './worker-ipc.js'

export interface PrioritiesWorkerConfig {
  readonly redisUrl: string
  /** Shared by the fleet's processes of one row, by no two rows. */
  readonly key: string
  readonly limiter: 'fleetlimit' | 'bottleneck'
  readonly limit: number
  readonly windowMs: number
  readonly upstreamUrl: string
  readonly batchLoops: number
  /** 0: no interactive calls from this process. */
  readonly interactiveEveryMs: number
  /** When this process's first interactive call starts, from the start. */
  readonly interactiveOffsetMs: number
}

/** An interactive call: when it started and when it was admitted (epoch ms); admitted 0 when never. */
export interface InteractiveCall {
  readonly startedAt: number
  readonly admittedAt: number
}

export interface PrioritiesWorkerReport {
  readonly calls: number
  readonly interactive: readonly InteractiveCall[]
  readonly errors: Record<string, number>
}

const { errors, record } = countErrors()

type Gate = (priority: 'interactive' | 'batch', signal: AbortSignal, admitted: () => void) => Promise<void>

/** limitedFetch on the fleet's Redis, at the upstream's quota, interactive 70 %, batch 30 %. */
function fleetlimitGate(config: PrioritiesWorkerConfig): { gate: Gate; close: () => Promise<void> } {
  const redis = new Redis(config.redisUrl)
  const limiter = createRateLimiter({
    store: redisStore(redis, { prefix: config.key }),
    limit: config.limit,
    window: config.windowMs,
    name: 'upstream',
    priorities: [
      { name: 'interactive', share: 0.7 },
      { name: 'batch', share: 0.3 },
    ],
    logger: { warn: record, info() {} },
  })
  return {
    gate: async (priority, signal, admitted) => {
      // The fetch limitedFetch calls once admitted: where the wait ends.
      const fetchAdmitted = (input: string | URL | Request, init?: RequestInit) => {
        admitted()
        return fetch(input, { ...init, headers: { 'x-class': priority } })
      }
      const call = limitedFetch(limiter, {
        key: 'upstream',
        priority,
        adapt: false,
        maxWaitMs: '1m',
        fetch: fetchAdmitted,
      })
      const response = await call(config.upstreamUrl, { signal })
      await response.arrayBuffer()
    },
    close: async () => void redis.disconnect(),
  }
}

/**
 * Bottleneck's nearest equivalent: a reservoir of the quota, refilled every window through its Redis clustering,
 * and its `priority` (0 highest), which orders the queue of each process, not the fleet's.
 */
async function bottleneckGate(config: PrioritiesWorkerConfig): Promise<{ gate: Gate; close: () => Promise<void> }> {
  const limiter = await clusteredReservoir(config, record)
  return {
    gate: async (priority, signal, admitted) => {
      const response = await limiter.schedule({ priority: priority === 'interactive' ? 0 : 9 }, () => {
        admitted()
        return fetch(config.upstreamUrl, { signal, headers: { 'x-class': priority } })
      })
      await response.arrayBuffer()
    },
    close: () => limiter.disconnect(),
  }
}

process.once('message', async (config: PrioritiesWorkerConfig) => {
  let gate: { gate: Gate; close: () => Promise<void> } | undefined
  try {
    gate = config.limiter === 'bottleneck' ? await bottleneckGate(config) : fleetlimitGate(config)
  } catch (error) {
    record(error)
  }
  // Calls still waiting for admission at the end are abandoned.
  const { startAt, endAt, signal, ended } = await startRun()
  let calls = 0
  const one = async (priority: 'interactive' | 'batch', admitted: () => void) => {
    calls++
    try {
      await Promise.race([gate?.gate(priority, signal, admitted), ended])
    } catch (error) {
      if (!signal.aborted) record(error)
    }
  }
  const loop = async () => {
    while (gate && Date.now() < endAt) await one('batch', () => {})
  }
  const interactive: { startedAt: number; admittedAt: number }[] = []
  const interactiveCalls: Promise<void>[] = []
  const every = async () => {
    if (config.interactiveEveryMs === 0) return
    // None starts in the last window, so that each may be admitted before the end (a wait is at most a window).
    const lastAt = endAt - config.windowMs
    for (let at = startAt + config.interactiveOffsetMs; at < lastAt; at += config.interactiveEveryMs) {
      await sleep(at - Date.now())
      const entry = { startedAt: Date.now(), admittedAt: 0 }
      interactive.push(entry)
      interactiveCalls.push(
        one('interactive', () => {
          entry.admittedAt = Date.now()
        }),
      )
    }
  }
  await Promise.all([...Array.from({ length: config.batchLoops }, loop), every()])
  await Promise.all(interactiveCalls)
  await send({ calls, interactive, errors } satisfies PrioritiesWorkerReport)
  await gate?.close().catch(record)
  process.disconnect()
})
