// The overhead part's load generator, in a process of its own so that generating load never shares an
// event loop with the servers it measures. The parent forks it once and sends one slice at a time over IPC.
import { fork } from 'node:child_process'
import { once } from 'node:events'
import autocannon from 'autocannon'

export interface SliceRequest {
  readonly url: string
  readonly durationMs: number
  readonly connections: number
  /** Each request carries `x-tenant: t<i mod tenants>`, whatever the server keys by, so every slice costs the generator the same. */
  readonly tenants: number
}

export interface SliceResult {
  /** Responses received, and the time they took, from the first request sent. */
  readonly responses: number
  readonly ms: number
  readonly statuses: Readonly<Record<string, number>>
  readonly errors: number
}

export interface LoadGenerator {
  run(slice: SliceRequest): Promise<SliceResult>
  close(): Promise<void>
}

/** Forks this file as a load generator process (TypeScript through tsx, as the bench itself runs). */
export async function startLoadGenerator(): Promise<LoadGenerator> {
  const child = fork(new URL(import.meta.url), [], {
    execArgv: ['--import', 'tsx'],
    cwd: new URL('..', import.meta.url),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  await once(child, 'message') // 'ready'
  let queue = Promise.resolve()
  return {
    run(slice) {
      const result = queue.then(async () => {
        child.send(slice)
        const [reply] = (await once(child, 'message')) as [SliceResult | { error: string }]
        if ('error' in reply) throw new Error(`load generator: ${reply.error}`)
        return reply
      })
      queue = result.then(
        () => {},
        () => {},
      )
      return result
    },
    async close() {
      if (child.exitCode !== null) return
      child.disconnect()
      await once(child, 'exit')
    },
  }
}

async function runSlice({ url, durationMs, connections, tenants }: SliceRequest): Promise<SliceResult> {
  let next = 0
  const result = await autocannon({
    url,
    connections,
    duration: durationMs / 1000,
    // autocannon notices the end of its duration only at a sample tick (every second by default).
    sampleInt: 50,
    requests: [
      {
        setupRequest: (request) => ({
          ...request,
          headers: { ...request.headers, 'x-tenant': `t${next++ % tenants}` },
        }),
      },
    ],
  })
  const statuses: Record<string, number> = {}
  for (const [code, { count = 0 }] of Object.entries(result.statusCodeStats ?? {})) statuses[code] = count
  return {
    responses: result.requests.total,
    ms: result.finish.getTime() - result.start.getTime(),
    statuses,
    errors: result.errors + result.timeouts,
  }
}

if (process.send !== undefined && process.argv[1] === new URL(import.meta.url).pathname) {
  process.on('message', (slice: SliceRequest) => {
    runSlice(slice).then(
      (result) => process.send?.(result),
      (error: unknown) => process.send?.({ error: String(error) }),
    )
  })
  process.on('disconnect', () => process.exit(0))
  process.send('ready')
}
