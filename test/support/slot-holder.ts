// A process that takes in-flight slots and then hangs, to be killed with SIGKILL: forked by the in-flight fleet
// tests. Its message: { redisUrl, prefix, concurrency, slotTtlMs }; it answers { held } once it holds them all.
import { createRateLimiter, definePolicy, redisStore } from '@fleetlimit/core'
import { Redis } from 'ioredis'

process.once(
  'message',
  async (message: { redisUrl: string; prefix: string; concurrency: number; slotTtlMs: number }) => {
    const { redisUrl, prefix, concurrency, slotTtlMs } = message
    const limiter = createRateLimiter({
      store: redisStore(new Redis(redisUrl), { prefix }),
      policies: [definePolicy({ name: 'parallel', concurrency, slotTtlMs })],
    })
    let held = 0
    for (let i = 0; i < concurrency; i++) if ((await limiter.consume('acme')).allowed) held++
    process.send?.({ held })
  },
)
