// `pnpm demo`: an acquire() burst and the express-basic example on the embedded store, and, with REDIS_URL set,
// both again on Redis, then a fleet of four processes sharing one limit through Redis.
import { randomBytes } from 'node:crypto'
import { memoryStore, redisStore, type Store } from '@fleetlimit/core'
import { runFleet } from '@fleetlimit/test-kit/fleet'
import { Redis } from 'ioredis'
import { acquireBurst } from './acquire-burst.js'
import { httpBurst } from './http-burst.js'

let failed = false
const check = (ok: boolean, text: string) => {
  failed ||= !ok
  console.log(`  ${ok ? 'ok  ' : 'FAIL'} ${text}`)
}

async function burst(label: string, store: Store): Promise<void> {
  console.log(`\n12 concurrent acquire() calls at a limit of 5 per 500 ms, on ${label}:`)
  const report = await acquireBurst(store, { calls: 12, limit: 5, windowMs: 500 })
  for (const [i, group] of report.groups.entries()) {
    const times = group.map((t) => `${Math.round(t)}`.padStart(5)).join(' ')
    console.log(`  group ${i + 1}: ${group.length} admitted at ms ${times}`)
  }
  const sizes = report.groups.map((g) => g.length).join(', ')
  check(sizes === '5, 5, 2', `admitted in groups of ${sizes} (expected 5, 5, 2), one window apart`)
  check(report.maxInWindow <= 5, `most admissions in any 500 ms window: ${report.maxInWindow} (limit 5)`)
}

async function fleet(redisUrl: string): Promise<void> {
  const limit = 20
  console.log(
    `\nFour worker processes call consume() on one key at a limit of ${limit} per 1 s for 3 s, through Redis:`,
  )
  const report = await runFleet({ redisUrl, limit, windowMs: 1_000, durationMs: 3_000, skewsMs: [0, 0, 0, 0] })
  console.log(`  ${report.calls} calls; admitted per worker: ${report.perWorker.join(', ')}`)
  check(
    report.maxInWindow <= limit,
    `most admissions in any 1 s window, all workers together: ${report.maxInWindow} (limit ${limit}; ` +
      `four per-process limiters would allow ${4 * limit})`,
  )
  check(
    report.inWholeWindows >= 0.95 * report.idealInWholeWindows,
    `admitted ${report.inWholeWindows} of the ${report.idealInWholeWindows} the limit allows in 3 windows`,
  )
}

async function http(label: string, store: Store): Promise<void> {
  console.log(`\nThe express-basic example on ${label}: seven GET /search (5 per 10 s, and 100 per minute globally):`)
  const exchanges = await httpBurst(7, store)
  for (const { status, headers } of exchanges) {
    const shown = Object.entries(headers).map(([name, value]) => `${name}: ${value}`)
    console.log(`  ${status}  ${shown.join(' | ')}`)
  }
  const statuses = exchanges.map((e) => e.status).join(' ')
  check(statuses === '200 200 200 200 200 429 429', `answered ${statuses}`)
}

/** What the demo runs on each store: the acquire() burst, then the HTTP burst. */
async function bursts(label: string, store: Store): Promise<void> {
  await burst(label, store)
  await http(label, store)
}

console.log('fleetlimit demo')
await bursts('the in-memory store (no Redis)', memoryStore())
const redisUrl = process.env.REDIS_URL
if (redisUrl) {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 })
  try {
    // A prefix of this run's own: the searches of a run a few seconds earlier are still in their window.
    await bursts(
      `Redis at ${redisUrl}`,
      redisStore(redis, { prefix: `fleetlimit-demo-${randomBytes(4).toString('hex')}` }),
    )
    await fleet(redisUrl)
  } finally {
    await redis.quit()
  }
} else {
  console.log(
    '\nSet REDIS_URL (for example redis://127.0.0.1:6379) to run both again on Redis, then four processes on one ' +
      'shared limit.',
  )
}
process.exitCode = failed ? 1 : 0
