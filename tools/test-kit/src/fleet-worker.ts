// One process of the fleet: hammers one key with consume() for a while and reports the server
// time of every admission. Started by fleet.ts with fork(); talks to it over IPC.
import { once } from 'node:events'
import { createRateLimiter, redisStore } from '@fleetlimit/core'
import { Cluster, Redis } from 'ioredis'
import type { FleetWorkerConfig } from './fleet.js'
import { recordingStore } from './recording-store.js'
import { sleep } from './sleep.js'

const send = (message: unknown) =>
  new Promise<void>((resolve, reject) => process.send?.(message, undefined, {}, (e) => (e ? reject(e) : resolve())))

process.once('message', async (config: FleetWorkerConfig) => {
  // A skewed client clock must not matter: the script reads the server's clock.
  const realNow = Date.now
  Date.now = () => realNow() + config.skewMs

  const redis = config.cluster ? new Cluster([...config.cluster]) : new Redis(config.redisUrl)
  const recording = recordingStore(redisStore(redis, { prefix: config.prefix }))
  const limiter = createRateLimiter({
    store: recording.store,
    limit: config.limit,
    window: config.windowMs,
    timeoutMs: config.timeoutMs,
    ...(config.local !== undefined && { local: config.local }),
  })
  // Units a lease admits here are decided in this process: noted on the wall clock, which on one machine is
  // the clock Redis's TIME reads (Date.now may be skewed on purpose, so it is not used).
  const wallNow = () => performance.timeOrigin + performance.now()
  if (redis.status !== 'ready') await once(redis, 'ready')
  // The warm-up is not measured: on a busy machine its first call (the script's text, a Cluster's slots) may take
  // longer than timeoutMs, so it is tried again, a few times.
  for (let attempt = 1; ; attempt++) {
    try {
      await limiter.peek(config.key)
      break
    } catch (error) {
      if (attempt === 5) throw error
    }
  }
  await send({ type: 'ready' })
  await new Promise((resolve) => process.once('message', resolve))

  let calls = 0
  let errors = 0
  const started = performance.now()
  const until = started + config.durationMs
  const decide = async () => {
    calls++
    const decision = await limiter.consume(config.key)
    if (decision.allowed && decision.source === 'local') recording.admissions.push(wallNow())
    return decision
  }
  if (typeof config.pace === 'number') {
    // Open loop: requests arrive at a steady rate whatever the answers, as from many independent clients.
    const perMs = config.pace / 1000
    const inFlight = new Set<Promise<unknown>>()
    let sent = 0
    while (performance.now() < until) {
      const due = Math.floor((performance.now() - started) * perMs)
      for (; sent < due; sent++) {
        const call = decide()
          .catch(() => {
            errors++
          })
          .finally(() => inFlight.delete(call))
        inFlight.add(call)
      }
      await sleep(2)
    }
    await Promise.all(inFlight)
  } else {
    const loop = async () => {
      while (performance.now() < until) {
        const decision = await decide()
        if (decision.allowed) continue
        if (config.pace === 'retry') await sleep(Math.min(decision.retryAfterMs, until - performance.now()))
        else await new Promise((resolve) => setImmediate(resolve))
      }
    }
    await Promise.all(Array.from({ length: config.concurrency }, loop))
  }
  await send({ type: 'done', admissions: recording.admissions, calls, errors, stats: limiter.stats() })
  redis.disconnect()
  process.disconnect()
})
