/** A failure the command line reports as one line on stderr, with its exit code: 2 for usage, 1 otherwise. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: 1 | 2 = 1,
  ) {
    super(message)
    this.name = 'CliError'
  }
}
