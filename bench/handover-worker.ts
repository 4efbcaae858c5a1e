// One waiting process of the handover part: acquires a slot of a full in-flight policy whenever the parent asks,
// and reports when it was admitted (wall-clock ms, comparable across processes of one machine). Forked by
// handover.ts; talks to it over IPC.
import { createRateLimiter, definePolicy, redisStore } from '@fleetlimit/core'
import { Redis } from 'ioredis'

export type HandoverMessage =
  | { type: 'setup'; redisUrl: string; prefix: string }
  /** Acquire `waiters` times at once on the key; report each admission, then release it. */
  | { type: 'wait'; waiters: number; hold: boolean }
  | { type: 'release' }
  /** Subscribe to `channel` on a connection of its own and report when each message arrives. */
  | { type: 'listen'; channel: string }

const wallNow = () => performance.timeOrigin + performance.now()
const send = (message: unknown) => process.send?.(message)
const slot = definePolicy({ name: 'handover', concurrency: 1 })
let limiter: ReturnType<typeof createRateLimiter> | undefined
let client: Redis | undefined
let held: Awaited<ReturnType<NonNullable<typeof limiter>['acquire']>>[] = []

process.on('message', async (message: HandoverMessage) => {
  if (message.type === 'setup') {
    client = new Redis(message.redisUrl)
    limiter = createRateLimiter({ store: redisStore(client, { prefix: message.prefix }), policies: [slot] })
    // Its first decision opens the connection and the subscription; a peek records nothing.
    await limiter.peek('k')
    send({ type: 'ready' })
  } else if (message.type === 'listen') {
    const subscriber = new Redis((client as Redis).options)
    subscriber.on('message', () => send({ type: 'heard', at: wallNow() }))
    await subscriber.subscribe(message.channel)
    send({ type: 'listening' })
  } else if (message.type === 'wait') {
    const current = limiter
    if (!current) throw new Error('wait before setup')
    let denied = false
    const off = current.on('decision', (d) => {
      if (!d.allowed && !denied) {
        denied = true
        send({ type: 'waiting' })
      }
    })
    await Promise.all(
      Array.from({ length: message.waiters }, async () => {
        const decision = await current.acquire('k')
        const at = wallNow()
        if (message.hold) held.push(decision)
        else await current.release(decision)
        send({ type: 'admitted', at })
      }),
    )
    off()
  } else {
    await Promise.all(held.map((d) => limiter?.release(d)))
    held = []
    send({ type: 'released' })
  }
})
