import { parseCommand, USAGE } from './args.js'
import { CliError } from './cli-error.js'
import { runCommand } from './commands.js'
import { ANSWER_MS, connect } from './connect.js'

interface Writable {
  write(text: string): unknown
}

/** Runs one command; resolves with the exit code. Every failure is one line on stderr. */
export async function main(argv: readonly string[], env: NodeJS.ProcessEnv, out: Writable, err: Writable) {
  try {
    const command = parseCommand(argv, env)
    if (command === 'help') {
      out.write(`${USAGE}\n`)
      return 0
    }
    if (command === 'usage') {
      err.write(`${USAGE}\n`)
      return 2
    }
    const connected = await connect(command.target)
    try {
      const output = await runCommand(command, connected).catch((error: unknown) => {
        if (error instanceof Error && error.message === 'Command timed out') {
          throw new CliError(`Redis at ${connected.shown} did not answer a command within ${ANSWER_MS / 1000} s`)
        }
        // Reads run on a replica; a write (reset, pause, resume) needs the primary. A store error has Redis's as cause.
        const reply = (error as { cause?: unknown } | undefined)?.cause ?? error
        if (reply instanceof Error && reply.message.startsWith('READONLY ')) {
          throw new CliError(
            `Redis at ${connected.shown} is a read-only replica: ${command.name} writes, give --redis the primary`,
          )
        }
        throw error
      })
      out.write(command.json ? `${JSON.stringify(output.json)}\n` : `${output.text}\n`)
      return 0
    } finally {
      connected.close()
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    err.write(`${/^fleetlimit: /.test(message) ? message : `fleetlimit: ${message}`}\n`.replace(/\n(?!$)/g, ' '))
    return error instanceof CliError ? error.exitCode : 1
  }
}
