import { OptionError } from './errors.js'

/** Milliseconds as a number, or a string such as `'250ms'`, `'10s'`, `'1.5m'`, `'1h'`, `'1d'`. */
export type Duration = number | `${number}${'ms' | 's' | 'm' | 'h' | 'd'}`

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const
const PATTERN = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/
const ACCEPTED = "a whole number of milliseconds, or a string like '250ms', '10s', '1m', '1h', '1d'"

/** Parses a duration option into whole milliseconds within [min, max], or throws an OptionError naming `option`. */
export function parseDuration(value: unknown, option: string, { min = 1, max = 366 * 86_400_000 } = {}): number {
  let ms: number | undefined
  if (typeof value === 'number') ms = value
  else if (typeof value === 'string') {
    const match = PATTERN.exec(value)
    // Rounded to the nanosecond so that '1.1s' is 1100, not 1100.0000000000002.
    if (match) ms = Math.round(Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS] * 1e6) / 1e6
  }
  if (ms === undefined || !Number.isInteger(ms) || ms < min || ms > max) {
    throw new OptionError(option, value, `${ACCEPTED}, from ${min} ms to ${max} ms`)
  }
  return ms
}
