// What one consume() passes through, counted rather than read: the functions of @fleetlimit/core that run once
// or more per call (V8's precise coverage, call counts), the files they are in, and the promises created per call
// (async_hooks), over calls made one at a time after a warm-up. On Redis (ioredis, `local: false`) and on the
// memory store. On the sources, whose files it names: `pnpm call-path`.
import { createHook } from 'node:async_hooks'
import { Session } from 'node:inspector/promises'
import { fileURLToPath } from 'node:url'
import { createRateLimiter, memoryStore, type RateLimiter, redisStore } from '@fleetlimit/core'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { Redis } from 'ioredis'

const CALLS = 2_000
const WARM_UP = 2_000

interface FunctionCoverage {
  readonly functionName: string
  readonly ranges: readonly { readonly count: number }[]
}
interface ScriptCoverage {
  readonly url: string
  readonly functions: readonly FunctionCoverage[]
}

export interface CallPath {
  /** Functions of core that ran at least once per call, by file. */
  readonly files: ReadonlyMap<string, readonly string[]>
  readonly functions: number
  /** Promises created per call, in every library the call passes through. */
  readonly promises: number
}

const callCounts = (coverage: readonly ScriptCoverage[]) => {
  const counts = new Map<string, number>()
  for (const { url, functions } of coverage) {
    const at = url.indexOf('/packages/core/src/')
    if (at === -1) continue
    const file = url.slice(at + '/packages/core/src/'.length)
    functions.forEach(({ functionName, ranges }, i) => {
      // tsx's compiler names functions through a helper of its own, `__name`, which the built package has not.
      if (functionName === '__name') return
      // The first range is the whole function: its count is how many times it was called.
      const count = ranges[0]?.count ?? 0
      if (count > 0) counts.set(`${file} ${functionName || `(anonymous #${i})`}`, count)
    })
  }
  return counts
}

/** The path of `limiter.consume` on `key`, from CALLS calls made one after another. */
export async function callPath(limiter: RateLimiter, key = 'tenant'): Promise<CallPath> {
  for (let i = 0; i < WARM_UP; i++) await limiter.consume(key)
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false })
  // Taking coverage resets its counts: what the next take returns is the calls' alone.
  await session.post('Profiler.takePreciseCoverage')
  let promises = 0
  const hook = createHook({
    init(_id, type) {
      if (type === 'PROMISE') promises++
    },
  }).enable()
  for (let i = 0; i < CALLS; i++) await limiter.consume(key)
  hook.disable()
  const after = callCounts(
    ((await session.post('Profiler.takePreciseCoverage')) as { result: ScriptCoverage[] }).result,
  )
  await session.post('Profiler.stopPreciseCoverage')
  session.disconnect()
  const files = new Map<string, string[]>()
  let functions = 0
  for (const [name, count] of after) {
    if (count < CALLS) continue
    const space = name.indexOf(' ')
    const file = name.slice(0, space)
    const fn = name.slice(space + 1)
    files.set(file, [...(files.get(file) ?? []), fn])
    functions++
  }
  // One extra promise per call is the loop's own await.
  return { files, functions, promises: promises / CALLS - 1 }
}

function print(name: string, path: CallPath) {
  console.log(`\n${name}: ${path.functions} functions in ${path.files.size} files, ${path.promises} promises per call`)
  for (const [file, fns] of [...path.files].sort()) console.log(`  ${file}: ${fns.join(', ')}`)
}

async function main() {
  const server = await startRedisServer()
  const client = new Redis(server.port)
  try {
    const onRedis = createRateLimiter({ store: redisStore(client), limit: 1e9, window: '1h', local: false })
    print('redisStore (ioredis), local: false', await callPath(onRedis))
    const inMemory = createRateLimiter({ store: memoryStore(), limit: 1e9, window: '1h' })
    print('memoryStore', await callPath(inMemory))
  } finally {
    client.disconnect()
    await server.stop()
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main()
