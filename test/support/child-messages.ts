import type { ChildProcess } from 'node:child_process'

/**
 * The messages a child process sends, kept as they come (one may arrive while a test awaits something else):
 * `next()` takes the oldest, waiting for it, and rejects once the child exited without sending one.
 */
export function childMessages(child: ChildProcess): { next(): Promise<Record<string, unknown>> } {
  const messages: Record<string, unknown>[] = []
  let arrived = () => {}
  let exited = false
  child.on('message', (message: Record<string, unknown>) => {
    messages.push(message)
    arrived()
  })
  child.once('exit', () => {
    exited = true
    arrived()
  })
  return {
    async next() {
      while (messages.length === 0) {
        if (exited) throw new Error('the child process exited before it reported')
        await new Promise<void>((resolve) => (arrived = resolve))
      }
      return messages.shift() as Record<string, unknown>
    },
  }
}
