// One process of the in-flight fleet: sets up the limiter under test from its module, then at the common start
// queues all its tasks at once and reports how they ended. Started by in-flight-fleet.ts with fork().
import { sleep } from '@fleetlimit/test-kit/sleep'
import type { CallResult, CreateGate, Gate, GateOptions } from './in-flight-peers.js'
import { countErrors, send } from './worker-ipc.js'

export interface WorkerConfig {
  readonly module: string
  readonly gate: Omit<GateOptions, 'onError'>
  readonly upstreamUrl: string
  /** This worker's tasks: each one's hold, in ms. */
  readonly holds: readonly number[]
  readonly maxAttempts: number
}

/** Sent once set up: setup errors are in the report that follows the start. */
export type WorkerMessage = { readonly type: 'ready' }

export interface WorkerReport {
  readonly completed: number
  readonly failed: number
  readonly refusals: number
  /** The wall clock (epoch ms) when its last task ended, or the deadline passed. */
  readonly endedAt: number
  readonly errors: Record<string, number>
}

const { errors, record } = countErrors()

async function callUpstream(url: string): Promise<CallResult> {
  const response = await fetch(url)
  const body = (await response.json()) as { usage?: { total_tokens?: number } }
  return {
    status: response.status,
    retryAfterS: Number(response.headers.get('retry-after') ?? 0),
    units: body.usage?.total_tokens ?? 0,
  }
}

process.once('message', async (config: WorkerConfig) => {
  let gate: Gate | undefined
  try {
    const { createGate } = (await import(config.module)) as { createGate: CreateGate }
    gate = await createGate({ ...config.gate, onError: record })
  } catch (error) {
    record(error)
  }
  await send({ type: 'ready' } satisfies WorkerMessage)
  const { startAt, deadlineMs } = await new Promise<{ startAt: number; deadlineMs: number }>((resolve) =>
    process.once('message', resolve),
  )
  await sleep(startAt - Date.now())
  let completed = 0
  let failed = 0
  let refusals = 0

  /** One task: its call through the gate, again after each 429's Retry-After, up to maxAttempts calls. */
  async function task(holdMs: number): Promise<void> {
    if (!gate) return void failed++
    const url = `${config.upstreamUrl}/v1/call?holdMs=${holdMs}`
    for (let attempt = 1; attempt <= config.maxAttempts; attempt++) {
      let result: CallResult
      try {
        result = await gate.run(() => callUpstream(url))
      } catch (error) {
        record(error)
        failed++
        return
      }
      if (result.status === 200) {
        completed++
        return
      }
      if (result.status !== 429) break
      refusals++
      await sleep(result.retryAfterS * 1_000)
    }
    failed++
  }

  let deadline: NodeJS.Timeout | undefined
  await Promise.race([
    Promise.all(config.holds.map(task)),
    new Promise((resolve) => {
      deadline = setTimeout(resolve, deadlineMs)
    }),
  ])
  clearTimeout(deadline)
  const report: WorkerReport = { completed, failed, refusals, endedAt: Date.now(), errors }
  await send(report)
  await gate?.close().catch(record)
  process.disconnect()
})
