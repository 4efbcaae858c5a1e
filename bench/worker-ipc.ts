// What a bench worker process shares: sending to its parent, counting the errors it would otherwise die of, and
// starting its run when the parent says.
import { sleep } from '@fleetlimit/test-kit/sleep'

/** Sends `message` to the parent process; resolves once it is written. */
export const send = (message: unknown) =>
  new Promise<void>((resolve, reject) => process.send?.(message, undefined, {}, (e) => (e ? reject(e) : resolve())))

/**
 * The worker's errors by message, for its report: `record` counts one, and every uncaught error and unhandled
 * rejection of this process is counted too.
 */
export function countErrors(): { errors: Record<string, number>; record: (error: unknown) => void } {
  const errors: Record<string, number> = {}
  const record = (error: unknown) => {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
    errors[message] = (errors[message] ?? 0) + 1
  }
  process.on('uncaughtException', record)
  process.on('unhandledRejection', record)
  return { errors, record }
}

/**
 * Says 'ready', waits for the parent's start (`startAt`, Date.now() time, and `durationMs`) and sleeps until then:
 * the run's start and end, a signal that aborts at the end, and a promise that resolves then (Bottleneck's queue takes no
 * signal: a race with `ended` leaves a call still queued at the end behind).
 */
export async function startRun(): Promise<{
  startAt: number
  endAt: number
  signal: AbortSignal
  ended: Promise<void>
}> {
  await send({ type: 'ready' })
  const { startAt, durationMs } = await new Promise<{ startAt: number; durationMs: number }>((resolve) =>
    process.once('message', resolve),
  )
  await sleep(startAt - Date.now())
  const signal = AbortSignal.timeout(durationMs)
  const ended = new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()))
  return { startAt, endAt: startAt + durationMs, signal, ended }
}
