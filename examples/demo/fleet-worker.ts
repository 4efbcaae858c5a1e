// One process of the fleet: hammers one key with consume() for a while and reports the server
// time of every admission. Started by fleet.ts with fork(); talks to it over IPC.
import { createRateLimiter, redisStore } from '@fleetlimit/core'
import { Redis } from 'ioredis'
import type { FleetWorkerConfig } from './fleet.js'
import { recordingStore } from './recording-store.js'

const send = (message: unknown) =>
  new Promise<void>((resolve, reject) => process.send?.(message, undefined, {}, (e) => (e ? reject(e) : resolve())))
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

process.once('message', async (config: FleetWorkerConfig) => {
  // A skewed client clock must not matter: the script reads the server's clock.
  const realNow = Date.now
  Date.now = () => realNow() + config.skewMs

  const redis = new Redis(config.redisUrl)
  const recording = recordingStore(redisStore(redis, { prefix: config.prefix }))
  const limiter = createRateLimiter({ store: recording.store, limit: config.limit, window: config.windowMs })
  await limiter.peek(config.key)
  await send({ type: 'ready' })
  await new Promise((resolve) => process.once('message', resolve))

  let calls = 0
  const until = performance.now() + config.durationMs
  const loop = async () => {
    while (performance.now() < until) {
      calls++
      const decision = await limiter.consume(config.key)
      if (!decision.allowed) await sleep(Math.min(decision.retryAfterMs, until - performance.now()))
    }
  }
  await Promise.all(Array.from({ length: config.concurrency }, loop))
  await send({ type: 'done', admissions: recording.admissions, calls })
  await redis.quit()
  process.disconnect()
})
