// The parent side of a bench's worker processes: their replies, and one run of them all, started together.
import type { ChildProcess } from 'node:child_process'

/** Waits for one message of the child, failing if it exits first. */
export function reply<T>(child: ChildProcess): Promise<T> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null) => reject(new Error(`bench worker exited with ${code}`))
    child.once('exit', onExit)
    child.once('message', (message: T) => {
      child.off('exit', onExit)
      resolve(message)
    })
  })
}

/**
 * Starts ready workers together: `start` makes the message each is sent, for a start `leadMs` from now (and may
 * start the upstream at that time too). Resolves with their reports, and the errors they counted, summed.
 */
export async function runWorkers<R extends { readonly errors: Record<string, number> }>(
  workers: readonly ChildProcess[],
  start: (startAt: number) => object,
  leadMs = 300,
): Promise<{ reports: R[]; errors: Record<string, number> }> {
  const done = workers.map((child) => reply<R>(child))
  const message = start(Date.now() + leadMs)
  for (const child of workers) child.send(message)
  const reports = await Promise.all(done)
  const errors: Record<string, number> = {}
  for (const report of reports) {
    for (const [text, times] of Object.entries(report.errors)) errors[text] = (errors[text] ?? 0) + times
  }
  return { reports, errors }
}
