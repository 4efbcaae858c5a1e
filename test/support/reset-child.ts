// A second process for fleet-reset.test.ts: a limiter whose deny cache holds a denial of key 'k', until a reset
// made by the parent process reaches it. Reads { redisUrl, prefix, timeoutMs? } over IPC; reports each step.
import { once } from 'node:events'
import { createRateLimiter, redisStore } from '@fleetlimit/core'
import { sleep } from '@fleetlimit/test-kit/sleep'
import { Redis } from 'ioredis'

const [config] = (await once(process, 'message')) as [{ redisUrl: string; prefix: string; timeoutMs?: number }]
const client = new Redis(config.redisUrl)
const store = redisStore(client, { prefix: config.prefix })
const limiter = createRateLimiter({ store, limit: 2, window: '1m', timeoutMs: config.timeoutMs ?? 100 })
const send = (message: object) => new Promise((resolve) => process.send?.(message, resolve))

const sources = []
for (let i = 0; i < 4; i++) sources.push((await limiter.consume('k')).source)
// Registered after the limiter's local tier: called once the tier has dropped the key.
const changed = new Promise<void>((resolve) => store.onKeyChange?.(() => resolve()))
while (Number(((await client.call('PUBSUB', 'NUMSUB', `${config.prefix}:changed`)) as [string, number])[1]) === 0) {
  await sleep(5)
}
await send({ type: 'denied', sources })
await changed
const after = await limiter.consume('k')
await send({ type: 'after', allowed: after.allowed, source: after.source })
client.disconnect()
