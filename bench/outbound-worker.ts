// One process of the outbound fleet: from the common start until the end, `concurrency` loops each call the
// upstream, one call after the other, through limitedFetch (with the row's adapt) or through Bottleneck's Redis
// clustering. Started by outbound.ts with fork().

import { createRateLimiter, limitedFetch, redisStore } from '@fleetlimit/core'
import { Redis } from 'ioredis'
import { clusteredReservoir } from './bottleneck-reservoir.js'
import { countErrors, send, startRun } from './worker-ipc.js'

export interface OutboundWorkerConfig {
  readonly redisUrl: string
  /** Shared by the fleet's processes of one row, by no two rows. */
  readonly key: string
  readonly limiter: 'fleetlimit' | 'bottleneck'
  readonly adapt: 'headers' | 'aimd' | false
  readonly limit: number
  readonly windowMs: number
  readonly upstreamUrl: string
  readonly concurrency: number
  /**
   * A tokens policy too (an LLM API's tokens per window, beside its requests): its configured limit, and each
   * call's tokens. The limiter then has two policies, 'rpm' and 'tpm'.
   */
  readonly tokens?: { readonly limit: number; readonly perCall: number }
}

export interface OutboundWorkerReport {
  readonly calls: number
  readonly errors: Record<string, number>
}

const { errors, record } = countErrors()

type Call = (signal: AbortSignal) => Promise<unknown>

/** limitedFetch on the fleet's Redis, configured 3x too high, as a fleet told the wrong quota is. */
function fleetlimitCall(config: OutboundWorkerConfig): { call: Call; close: () => Promise<void> } {
  const redis = new Redis(config.redisUrl)
  const store = redisStore(redis, { prefix: config.key })
  const logger = { warn: record, info() {} }
  const { tokens } = config
  const limiter = tokens
    ? createRateLimiter({
        store,
        policies: [
          { name: 'rpm', limit: config.limit, window: config.windowMs },
          { name: 'tpm', limit: tokens.limit, window: config.windowMs },
        ],
        logger,
      })
    : createRateLimiter({ store, limit: config.limit, window: config.windowMs, name: 'upstream', logger })
  const fetchLimited = limitedFetch(limiter, {
    key: 'upstream',
    adapt: config.adapt,
    maxWaitMs: '1m',
    ...(tokens && { cost: { rpm: 1, tpm: tokens.perCall } }),
  })
  return {
    call: async (signal) => {
      const response = await fetchLimited(config.upstreamUrl, { signal })
      await response.arrayBuffer()
    },
    close: async () => void redis.disconnect(),
  }
}

/**
 * Bottleneck's nearest equivalent, shared through its Redis clustering: a reservoir of the configured limit
 * refilled every window; an answer that says the quota has nothing left (or a 429) empties the reservoir for
 * every process until Bottleneck's next refill, and a stated quota becomes the refill amount (updateSettings).
 */
async function bottleneckCall(config: OutboundWorkerConfig): Promise<{ call: Call; close: () => Promise<void> }> {
  const limiter = await clusteredReservoir(config, record)
  let refill = config.limit
  return {
    call: async (signal) => {
      const response = await limiter.schedule(() => fetch(config.upstreamUrl, { signal }))
      await response.arrayBuffer()
      const stated = Number(response.headers.get('x-ratelimit-limit') ?? Number.NaN)
      const settings: { reservoir?: number; reservoirRefreshAmount?: number } = {}
      if (Number.isInteger(stated) && stated > 0 && Math.min(stated, config.limit) !== refill) {
        refill = Math.min(stated, config.limit)
        settings.reservoirRefreshAmount = refill
      }
      if (response.status === 429 || response.headers.get('x-ratelimit-remaining') === '0') settings.reservoir = 0
      if (Object.keys(settings).length > 0) await limiter.updateSettings(settings)
    },
    close: () => limiter.disconnect(),
  }
}

process.once('message', async (config: OutboundWorkerConfig) => {
  let gate: { call: Call; close: () => Promise<void> } | undefined
  try {
    gate = config.limiter === 'bottleneck' ? await bottleneckCall(config) : fleetlimitCall(config)
  } catch (error) {
    record(error)
  }
  // Calls still waiting for admission at the end are abandoned.
  const { endAt, signal, ended } = await startRun()
  let calls = 0
  const loop = async () => {
    while (gate && Date.now() < endAt) {
      calls++
      try {
        await Promise.race([gate.call(signal), ended])
      } catch (error) {
        if (!signal.aborted) record(error)
      }
    }
  }
  await Promise.all(Array.from({ length: config.concurrency }, loop))
  await send({ calls, errors } satisfies OutboundWorkerReport)
  await gate?.close().catch(record)
  process.disconnect()
})
