import { describe, OptionError } from './errors.js'

// Names users of other rate limiters type by habit, mapped to ours, for a helpful error.
const FAMILIAR: Record<string, string> = {
  windowMs: 'window',
  duration: 'window',
  interval: 'window',
  max: 'limit',
  points: 'limit',
  keyPrefix: 'prefix',
  timeout: 'timeoutMs',
}

/** Throws when `options` is not a plain object or holds a name outside `accepted`, so a typo is never ignored. */
export function checkOptionNames(
  options: unknown,
  where: string,
  accepted: readonly string[],
): Record<string, unknown> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new OptionError(where, options, 'an options object')
  }
  for (const name of Object.keys(options)) {
    if (accepted.includes(name)) continue
    const familiar = FAMILIAR[name]
    const expected =
      familiar !== undefined && accepted.includes(familiar)
        ? `fleetlimit calls it \`${familiar}\``
        : `accepted options are ${accepted.join(', ')}`
    throw new OptionError(`${where}.${name}`, (options as Record<string, unknown>)[name], expected, true)
  }
  return options as Record<string, unknown>
}

/** A whole number in [min, max], or an OptionError naming `option`. */
export function checkInteger(value: unknown, option: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new OptionError(option, value, `a whole number from ${min} to ${max}`)
  }
  return value
}

/** One of the listed strings, or an OptionError naming `option`. */
export function checkOneOf<T extends string>(value: unknown, option: string, accepted: readonly T[]): T {
  if (typeof value !== 'string' || !accepted.includes(value as T)) {
    throw new OptionError(option, value, `one of ${accepted.map((a) => describe(a)).join(', ')}`)
  }
  return value as T
}

/** Every option of an options type, as a record: a new option that is not named here fails to compile. */
export type OptionNames<T> = { readonly [K in keyof Required<T>]: true }

/** The accepted names of an options type, from its record. */
export function optionNames<T>(names: OptionNames<T>): readonly (keyof T & string)[] {
  return Object.keys(names) as (keyof T & string)[]
}

/** A function, or undefined; else an OptionError naming `option`. */
export function optionalFunction<F>(value: F | undefined, option: string): F | undefined {
  if (value !== undefined && typeof value !== 'function') throw new OptionError(option, value, 'a function')
  return value
}

/** true or false, or an OptionError naming `option`. */
export function checkBoolean(value: unknown, option: string): boolean {
  if (typeof value !== 'boolean') throw new OptionError(option, value, 'true or false')
  return value
}
