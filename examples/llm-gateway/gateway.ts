// One gateway: a limiter of the LLM upstream's three limits on the fleet's store, and `calls` loops, each calling
// the upstream through limitedFetch one call at a time until stopped. worker.ts runs one per process on Redis;
// app.ts runs them side by side in its own process on the memory store.
import {
  createRateLimiter,
  isFleetlimitError,
  type LimitedFetchOptions,
  limitedFetch,
  type Store,
} from '@fleetlimit/core'

export interface GatewayConfig {
  readonly worker: number
  readonly upstreamUrl: string
  /** Concurrent calls this gateway keeps going. */
  readonly calls: number
  readonly requestsPerWindow: number
  readonly unitsPerWindow: number
  readonly inFlight: number
  /** The fleet's window: the upstream's plus the margin for the time between admission and arrival. */
  readonly windowMs: number
  /** The units each call is admitted with, settled to its true cost once the upstream answered. */
  readonly estimate: number
}

/** This gateway's limiter now holds a policy to a limit learned from the upstream (null: back to its own). */
export interface Learned {
  readonly type: 'learned'
  readonly worker: number
  readonly policy: string
  readonly limit: number | null
}

/** A priority class's calls in one gateway: those served, and how long each took (admission wait included), in ms. */
export interface ClassCalls {
  readonly served: number
  readonly latenciesMs: readonly number[]
}

export interface Done {
  readonly type: 'done'
  readonly worker: number
  readonly ok: number
  readonly limited: number
  readonly errors: number
  /** The calls of each priority class: the first loop's are interactive, the others batch. */
  readonly classes: { readonly interactive: ClassCalls; readonly batch: ClassCalls }
  /** Settles that went over a policy's limit: the estimate was below a call's true cost. */
  readonly overLimit: number
}

/** The true cost the upstream reports: its usage, for a call it served; nothing for a refused one. */
async function usageOf(response: Response): Promise<number> {
  if (!response.ok) return 0
  const body = (await response.json()) as { usage?: { total_tokens?: unknown } }
  const tokens = body.usage?.total_tokens
  if (typeof tokens !== 'number') throw new Error(`no usage.total_tokens in the answer: ${JSON.stringify(body)}`)
  return tokens
}

/** A gateway on `store`; `tell` hears what its limiter learns. `run` calls until `stop` aborts, then reports. */
export function createGateway(config: GatewayConfig, store: Store, tell: (learned: Learned) => void) {
  // A background caller can give Redis longer than a request path would (the default is 100 ms).
  const timeoutMs = 500
  // Every gateway builds the same limiter on the same store: one set of quotas for the whole fleet, decided in one
  // store call per admission.
  const limiter = createRateLimiter({
    store,
    policies: [
      { name: 'requests', limit: config.requestsPerWindow, window: config.windowMs, timeoutMs },
      {
        name: 'units',
        limit: config.unitsPerWindow,
        window: config.windowMs,
        timeoutMs,
        // A chat user's call goes before the batch jobs': while one waits in any gateway, batch calls are held to
        // their half of the units, so the units that free go to it; while no user waits, batch may use them all.
        priorities: [
          { name: 'interactive', share: 0.5 },
          { name: 'batch', share: 0.5 },
        ],
      },
      { name: 'in-flight', concurrency: config.inFlight, timeoutMs },
    ],
  })
  // The upstream states its quotas in every answer; what the fleet learns of them, each gateway tells.
  limiter.on('learned', (_key, learned, policy) => {
    tell({ type: 'learned', worker: config.worker, policy, limit: learned?.limit ?? null })
  })
  // The limiter as limitedFetch sees it, counting the settles that left a window over its limit: none should,
  // as no call costs more than the estimate it was admitted with.
  let overLimit = 0
  const settling = {
    ...limiter,
    async settle(...args: Parameters<typeof limiter.settle>) {
      const result = await limiter.settle(...args)
      if (result.overLimit > 0) overLimit++
      return result
    },
  }
  let errors = 0
  const options: LimitedFetchOptions = {
    key: 'api.llm.test',
    // A call is admitted with its upper bound (an LLM call's max_tokens), and settled down to its usage.
    cost: { requests: 1, units: config.estimate },
    // The upstream's quotas (x-ratelimit-*-requests and -tokens) lower these policies' limits, fleet-wide.
    quotas: { requests: 'requests', tokens: 'units' },
    settle: async (response) => ({ units: await usageOf(response) }),
    onSettleError(error) {
      errors++
      console.error(`worker ${config.worker}: settle:`, error)
    },
    // A wait for the units to leave the window may last nearly a window; when the quotas drop, a call that waited
    // for one window's units may wait for the next window's drain below the new quotas too.
    maxWaitMs: 3 * config.windowMs,
  }
  const upstreams = {
    interactive: limitedFetch(settling, { ...options, priority: 'interactive' }),
    batch: limitedFetch(settling, { ...options, priority: 'batch' }),
  }

  return {
    /**
     * One connection per loop, opened before the run (GET /stats is not a call): a first call that had to connect
     * would reach the upstream later after its admission than the margin allows for.
     */
    async connect(): Promise<void> {
      await Promise.all(
        Array.from({ length: config.calls }, async () => (await fetch(`${config.upstreamUrl}/stats`)).arrayBuffer()),
      )
    },
    /** Calls until `stop` aborts the calls in progress (their waits for admission, or the requests themselves). */
    async run(stop: AbortSignal): Promise<Done> {
      const headers = { 'content-type': 'application/json', 'x-worker': String(config.worker) }
      const body = JSON.stringify({ model: 'stub', messages: [{ role: 'user', content: 'hello' }] })
      let ok = 0
      let limited = 0
      const classes = {
        interactive: { served: 0, latenciesMs: [] as number[] },
        batch: { served: 0, latenciesMs: [] as number[] },
      }
      const loop = async (index: number) => {
        const priority = index === 0 ? 'interactive' : 'batch'
        const upstream = upstreams[priority]
        while (!stop.aborted) {
          try {
            const started = performance.now()
            const response = await upstream(`${config.upstreamUrl}/v1/chat/completions`, {
              method: 'POST',
              headers,
              body,
              signal: stop,
            })
            // The caller reads the answer as usual: the settle read a copy of it.
            await response.json()
            if (response.ok) {
              ok++
              classes[priority].served++
              classes[priority].latenciesMs.push(performance.now() - started)
            } else if (response.status === 429) limited++
            else throw new Error(`upstream answered ${response.status}`)
          } catch (error) {
            if (stop.aborted) break
            errors++
            console.error(`worker ${config.worker}:`, isFleetlimitError(error) ? error.message : error)
          }
        }
      }
      await Promise.all(Array.from({ length: config.calls }, (_, index) => loop(index)))
      return { type: 'done', worker: config.worker, ok, limited, errors, overLimit, classes }
    },
  }
}
