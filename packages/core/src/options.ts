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
