// One fresh process of the load part: creates a client and a limiter with the default options, fires `calls`
// concurrent consume() calls at once, before anything is warm, and reports what they got. Started by load.ts.
import { createRateLimiter, redisStore } from '@fleetlimit/core'
import { Redis } from 'ioredis'
import { burst } from './load-burst.js'

process.once('message', async ({ redisUrl, calls, tenant }: { redisUrl: string; calls: number; tenant: string }) => {
  const client = new Redis(redisUrl)
  const limiter = createRateLimiter({
    store: redisStore(client),
    limit: 1_000_000_000,
    window: '1m',
    logger: { warn() {} },
  })
  const result = await burst(limiter, tenant, calls)
  process.send?.(result, () => {
    client.disconnect()
    process.exit(0)
  })
})
