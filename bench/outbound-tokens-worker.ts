// One process of the LLM-shaped fleet: from the common start until the end, `concurrency` loops each call the
// upstream, one call after the other, through limitedFetch at the row's cost (settled from the usage the answer
// reports), or through Bottleneck's Redis clustering with a weight per job. Started by outbound-tokens.ts with fork().
import { createRateLimiter, type Decision, limitedFetch, type OutboundLimiter, redisStore } from '@fleetlimit/core'
import { Redis } from 'ioredis'
import { clusteredReservoir } from './bottleneck-reservoir.js'
import { seededLognormal } from './outbound-tokens-upstream.js'
import { countErrors, send, startRun } from './worker-ipc.js'

/** What a call reserves: the worst case of any call, its own bound (prompt + max_tokens), or the key's estimate. */
export type TokenRowKind = 'worst' | 'bound' | 'estimate' | 'bottleneck'

export interface TokenWorkerConfig {
  readonly redisUrl: string
  /** Shared by the fleet's processes of one row, by no two rows. */
  readonly key: string
  readonly kind: TokenRowKind
  readonly limit: number
  readonly windowMs: number
  /** The prompts: their median and spread (lognormal), at most `maxPrompt`; each worker draws its own from `seed`. */
  readonly promptMedian: number
  readonly promptSigma: number
  readonly maxPrompt: number
  readonly maxTokens: number
  readonly seed: number
  readonly concurrency: number
  readonly upstreamUrl: string
  readonly transitMs: number
  /** The estimate's options (the estimate row, and Bottleneck's weight). */
  readonly initial: number
  readonly percentile: number
}

export interface TokenWorkerReport {
  readonly calls: number
  /** Over every admitted call: units reserved, units settled, and the sum of (reserved - settled) x ms until settled. */
  readonly settles: number
  readonly reservedUnits: number
  readonly settledUnits: number
  readonly excessUnitMs: number
  readonly errors: Record<string, number>
}

const { errors, record } = countErrors()

type Call = (prompt: number, signal: AbortSignal) => Promise<void>

const usageOf = async (response: Response) =>
  ((await response.json()) as { usage: { total_tokens: number } }).usage.total_tokens

/** The bench's own running percentile, for Bottleneck's weight: `initial` until 10 costs, then of the last 100. */
function runningPercentile(initial: number, percentile: number) {
  const costs: number[] = []
  return {
    add(cost: number) {
      if (cost > 0) costs.push(cost)
      if (costs.length > 100) costs.shift()
    },
    get(): number {
      if (costs.length < 10) return initial
      const sorted = [...costs].sort((a, b) => a - b)
      return sorted[Math.max(1, Math.ceil(percentile * sorted.length - 1e-9)) - 1] as number
    },
  }
}

function fleetlimitCall(config: TokenWorkerConfig, totals: Totals): { call: Call; close: () => Promise<void> } {
  const redis = new Redis(config.redisUrl)
  const limiter = createRateLimiter({
    store: redisStore(redis, { prefix: config.key }),
    limit: config.limit,
    window: config.windowMs,
    name: 'tpm',
    logger: { warn: record, info() {} },
    estimate: { initial: config.initial, percentile: config.percentile },
  })
  // The limiter, with what each admission reserved and how long until its settle.
  const admitted = new WeakMap<Decision, { at: number; reserved: number }>()
  const measured: OutboundLimiter = {
    async acquire(key, options) {
      const decision = await limiter.acquire(key, options)
      admitted.set(decision, { at: performance.now(), reserved: decision.reserved ?? (options?.cost as number) })
      return decision
    },
    pause: (key, ms) => limiter.pause(key, ms),
    settle(decision, options) {
      const made = admitted.get(decision)
      const cost = options.cost as number
      if (made) {
        totals.settles++
        totals.reservedUnits += made.reserved
        totals.settledUnits += cost
        totals.excessUnitMs += (made.reserved - cost) * (performance.now() - made.at)
      }
      return limiter.settle(decision, options)
    },
  }
  const fetchAt = (cost: number | 'estimate') =>
    limitedFetch(measured, {
      key: 'llm',
      cost,
      settle: usageOf,
      adapt: false,
      maxRetries: 0,
      maxWaitMs: '1m',
      transitMs: config.transitMs,
    })
  const worst = fetchAt(config.maxPrompt + config.maxTokens)
  const estimated = fetchAt('estimate')
  return {
    call: async (prompt, signal) => {
      const send =
        config.kind === 'worst' ? worst : config.kind === 'estimate' ? estimated : fetchAt(prompt + config.maxTokens)
      const response = await send(config.upstreamUrl, {
        method: 'POST',
        headers: { 'x-prompt-tokens': `${prompt}` },
        signal,
      })
      await response.arrayBuffer()
    },
    close: async () => void redis.disconnect(),
  }
}

/**
 * Bottleneck's nearest equivalent: a reservoir of the limit refilled every window (fixed windows, through its Redis
 * clustering), each job weighing this process's running percentile of the usage reported. It cannot settle: a
 * job's weight stays what it was charged, whatever the call used.
 */
async function bottleneckCall(config: TokenWorkerConfig): Promise<{ call: Call; close: () => Promise<void> }> {
  const limiter = await clusteredReservoir(config, record)
  const estimate = runningPercentile(config.initial, config.percentile)
  return {
    call: async (prompt, signal) => {
      const weight = Math.min(config.limit, estimate.get())
      const response = await limiter.schedule({ weight }, () =>
        fetch(config.upstreamUrl, { method: 'POST', headers: { 'x-prompt-tokens': `${prompt}` }, signal }),
      )
      estimate.add(await usageOf(response))
    },
    close: () => limiter.disconnect(),
  }
}

interface Totals {
  settles: number
  reservedUnits: number
  settledUnits: number
  excessUnitMs: number
}

process.once('message', async (config: TokenWorkerConfig) => {
  const totals: Totals = { settles: 0, reservedUnits: 0, settledUnits: 0, excessUnitMs: 0 }
  let gate: { call: Call; close: () => Promise<void> } | undefined
  try {
    gate = config.kind === 'bottleneck' ? await bottleneckCall(config) : fleetlimitCall(config, totals)
    // One connection per loop, opened before the run: a new connection's first request arrives late.
    await Promise.all(
      Array.from({ length: config.concurrency }, () =>
        fetch(config.upstreamUrl, { method: 'POST' }).then((r) => r.arrayBuffer()),
      ),
    )
  } catch (error) {
    record(error)
  }
  // Calls still waiting for admission at the end are abandoned.
  const { endAt, signal, ended } = await startRun()
  const prompts = seededLognormal(config.seed, config.promptMedian, config.promptSigma, config.maxPrompt)
  let calls = 0
  const loop = async () => {
    while (gate && Date.now() < endAt) {
      calls++
      try {
        await Promise.race([gate.call(prompts(), signal), ended])
      } catch (error) {
        if (!signal.aborted) record(error)
      }
    }
  }
  await Promise.all(Array.from({ length: config.concurrency }, loop))
  await send({ calls, ...totals, errors } satisfies TokenWorkerReport)
  await gate?.close().catch(record)
  process.disconnect()
})
