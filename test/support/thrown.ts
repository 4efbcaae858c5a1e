/** What `run` throws, or undefined when it returns: for asserting a synchronous error's fields. */
export function thrown(run: () => unknown): unknown {
  try {
    run()
  } catch (error) {
    return error
  }
  return undefined
}
