// What a reset or pause message costs a process whose local tier holds many cached denials: `cached` tenants
// denied (one policy, or two decided together), then `messages` messages on `{prefix}:changed` from another
// client, each naming the key of one of them (as a reset through a one-policy limiter sends). Measured: the time
// until this process has handled the last, and the longest the event loop was blocked meanwhile.
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { createRateLimiter, type PolicyOptions, redisStore } from '@fleetlimit/core'
import { Redis } from 'ioredis'

export interface MessageRow {
  readonly policies: number
  readonly cached: number
  readonly messages: number
  readonly handledMs: number
  readonly maxBlockedMs: number
}

const PREFIX = 'bench-messages'
// The listeners of a measure, held here while it runs: a store holds its listeners weakly.
const listening = new Set<unknown>()
const WINDOW_MS = 600_000

export async function localMessages(
  redisUrl: string,
  { cached = 10_000, messages = 10_000 } = {},
): Promise<MessageRow[]> {
  const rows: MessageRow[] = []
  for (const policies of [1, 2]) rows.push(await measure(redisUrl, policies, cached, messages))
  return rows
}

async function measure(redisUrl: string, count: number, cached: number, messages: number): Promise<MessageRow> {
  const client = new Redis(redisUrl)
  const publisher = new Redis(redisUrl)
  const prefix = `${PREFIX}-${count}`
  try {
    const global: PolicyOptions = { name: 'global', limit: 1, window: WINDOW_MS, scope: 'tenant' }
    const search: PolicyOptions = { name: 'search', limit: 1, window: WINDOW_MS }
    const store = redisStore(client, { prefix })
    const limiter = createRateLimiter({ store, policies: count === 1 ? [global] : [global, search] })
    let handled = 0
    let done: (() => void) | undefined
    // Added after the limiter's local tier: it hears each message once the tier has handled it.
    const listener = (keys: readonly string[] | undefined) => {
      if (keys !== undefined && ++handled === messages) done?.()
    }
    listening.add(listener)
    store.onKeyChange?.(listener)
    await waitForSubscriber(publisher, `${prefix}:changed`)

    // Each tenant's second call is denied by the store and cached.
    const tenants = Array.from({ length: cached }, (_, i) => `t${i}`)
    for (let i = 0; i < cached; i += 1_000) {
      const chunk = tenants.slice(i, i + 1_000)
      const key = (tenant: string) => ({ tenant, route: 'GET /search' })
      await Promise.all(chunk.map((tenant) => limiter.consume(key(tenant))))
      await Promise.all(chunk.map((tenant) => limiter.consume(key(tenant))))
    }
    const before = limiter.stats().localHits
    await limiter.consume({ tenant: 't0', route: 'GET /search' })
    if (limiter.stats().localHits !== before + 1) throw new Error('the denials were not cached')

    const allHandled = new Promise<void>((resolve) => (done = resolve))
    const delay = monitorEventLoopDelay({ resolution: 1 })
    delay.enable()
    const start = performance.now()
    const pipeline = publisher.pipeline()
    for (let i = 0; i < messages; i++) {
      pipeline.publish(`${prefix}:changed`, `global~sl3-${WINDOW_MS}:{t${i % cached}}`)
    }
    await pipeline.exec()
    await allHandled
    const handledMs = performance.now() - start
    delay.disable()
    listening.delete(listener)
    const calls = limiter.stats().storeCalls
    await limiter.consume({ tenant: 't0', route: 'GET /search' })
    if (limiter.stats().storeCalls !== calls + 1) throw new Error('a message did not drop its cached denial')
    return { policies: count, cached, messages, handledMs, maxBlockedMs: delay.max / 1e6 }
  } finally {
    client.disconnect()
    publisher.disconnect()
  }
}

/** Resolves once the store's subscriber connection is subscribed to `channel`. */
async function waitForSubscriber(publisher: Redis, channel: string): Promise<void> {
  for (let tries = 0; tries < 1_000; tries++) {
    const [, subscribers] = (await publisher.call('PUBSUB', 'NUMSUB', channel)) as [string, number]
    if (subscribers > 0) return
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  throw new Error(`no subscriber on ${channel}`)
}
