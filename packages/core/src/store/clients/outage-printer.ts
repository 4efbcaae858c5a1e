/**
 * What a client with no 'error' listener of its own would hide (node-redis would crash, ioredis print each
 * error): one line when an outage starts, and one when the client is ready again. Errors in between, one per
 * reconnect attempt, are counted, not printed.
 */
export function createOutagePrinter(emitter: { listenerCount(event: string): number }, library: string) {
  let errors = 0
  return {
    error(error: unknown) {
      if (emitter.listenerCount('error') !== 1) return
      if (errors++ === 0) {
        console.error(
          `[fleetlimit] ${library} client error: ${oneLine(error)} (further errors are counted until it is ready)`,
        )
      }
    },
    ready() {
      if (errors === 0) return
      console.error(`[fleetlimit] ${library} client ready again, after ${errors} error${errors === 1 ? '' : 's'}`)
      errors = 0
    },
  }
}

/** An error as one line: its message, or its code (a connection refused on several addresses has no message). */
function oneLine(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const { code } = error as { code?: unknown }
  const text = error.message || (typeof code === 'string' ? code : error.name)
  return text.replace(/\s*\n\s*/g, ' ')
}
