// What a bench worker process shares: sending to its parent, and counting the errors it would otherwise die of.

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
