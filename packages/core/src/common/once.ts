/** A function that makes its value on the first call and returns that value ever after. */
export function once<T>(make: () => T): () => T {
  let made: { value: T } | undefined
  return () => {
    made ??= { value: make() }
    return made.value
  }
}
