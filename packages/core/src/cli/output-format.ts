// How the commands print: a policy, a key's usage and its route as text for a person or JSON for a machine,
// durations, and aligned columns.
import type { WindowResult } from '../store/store.js'
import type { PolicyFields } from './command-policy.js'
import type { Usage } from './key-usage.js'
import type { StoredKey } from './stored-keys.js'

/** A peek's lines of usage: units in the window and a pause, or slots held and when they end. */
export function usageLines(usage: Usage, limit: number | undefined, next: WindowResult | undefined): string[][] {
  const lines: string[][] = []
  if (usage.nextSlotEndMs === undefined) {
    lines.push(
      ['used', next ? `${usage.used} of ${limit} (${next.remaining} remaining)` : String(usage.used)],
      ['window', usage.resetMs === 0 ? 'empty' : `empties in ${seconds(usage.resetMs)}`],
      ['paused', usage.pausedMs === 0 ? 'no' : `for ${seconds(usage.pausedMs)} more`],
    )
  } else {
    const ends = `the next ends in ${seconds(usage.nextSlotEndMs)}, the last in ${seconds(usage.resetMs)}`
    lines.push(
      ['held', next ? `${usage.used} of ${slots(limit as number)} (${next.remaining} free)` : slots(usage.used)],
      ['slots', usage.used === 0 ? 'none held' : ends],
    )
  }
  if (next) lines.push(['next call', next.allowed ? 'admitted' : `denied, retry in ${seconds(next.retryAfterMs)}`])
  return lines
}

/** A calendar peek's lines of usage: the count, the period's start and its end (the reset) in the zone, a hold. */
export function periodLines(
  usage: Usage,
  policy: PolicyFields,
  limit: number | undefined,
  next: WindowResult | undefined,
): string[][] {
  const zone = policy.timeZone ?? 'UTC'
  const { period } = usage
  const lines = [
    ['used', next ? `${usage.used} of ${limit} (${next.remaining} remaining)` : String(usage.used)],
    ['period', period ? `${policy.period} from ${zonedTime(period.start, zone)}` : `${policy.period}, none counted`],
  ]
  if (period) {
    lines.push([
      'resets',
      `at ${zonedTime(period.end, zone)}${usage.resetMs === 0 ? '' : `, in ${seconds(usage.resetMs)}`}`,
    ])
  }
  lines.push(['paused', usage.pausedMs === 0 ? 'no' : `for ${seconds(usage.pausedMs)} more`])
  if (next) lines.push(['next call', next.allowed ? 'admitted' : `denied, retry in ${seconds(next.retryAfterMs)}`])
  return lines
}

/**
 * A usage as --json shows it: a calendar period's start and end (its reset) as instants in the policy's zone,
 * `periodStart` and `resetAt` (null when the key counts no current period and no anchor named one).
 */
export function usageJson(
  usage: Usage,
  policy: PolicyFields,
): Omit<Usage, 'period'> & { periodStart?: string | null; resetAt?: string | null } {
  const { period, ...rest } = usage
  if (policy.period === undefined) return rest
  const zone = policy.timeZone ?? 'UTC'
  return {
    ...rest,
    periodStart: period ? zonedTime(period.start, zone) : null,
    resetAt: period ? zonedTime(period.end, zone) : null,
  }
}

/** A learned limit, for a person. */
export const learnedLine = ({ limit, source }: { limit: number; source: 'headers' | 'aimd' }) =>
  `limit ${limit}, from the upstream's ${source === 'headers' ? 'quota headers' : '429s (aimd)'}`

/** Another live key's route as --json shows it: null for none or a hashed one. */
export const otherRoute = (other: StoredKey) => (other.hasRoute ? (other.route ?? null) : null)

/** The option that names a key's route, quoted for a shell. */
export const routeFlag = (stored: StoredKey) =>
  !stored.hasRoute
    ? 'no --route'
    : stored.route === undefined
      ? `a hashed route (${stored.key.slice(stored.key.lastIndexOf(':') + 1)})`
      : `--route '${stored.route.replaceAll("'", "'\\''")}'`

export const policyJson = (policy: PolicyFields, limit: number | undefined) =>
  policy.period !== undefined
    ? { name: policy.name, period: policy.period, timeZone: policy.timeZone, ...(limit !== undefined && { limit }) }
    : policy.inFlight
      ? {
          name: policy.name,
          inFlight: true,
          slotTtlMs: policy.window,
          ...(limit !== undefined && { concurrency: limit }),
        }
      : {
          name: policy.name,
          windowMs: policy.window,
          algorithm: policy.algorithm,
          ...(policy.buckets !== undefined && { buckets: policy.buckets }),
          ...(limit !== undefined && { limit }),
        }

export const describePolicy = (policy: PolicyFields, limit: number | undefined) =>
  policy.period !== undefined
    ? `${policy.name}, per ${policy.period} in ${policy.timeZone}${limit === undefined ? '' : `, limit ${limit}`}`
    : policy.inFlight
      ? `${policy.name}, in flight, slots live ${duration(policy.window)}${limit === undefined ? '' : `, concurrency ${limit}`}`
      : `${policy.name}, window ${duration(policy.window)}${limit === undefined ? '' : `, limit ${limit}`}${
          policy.algorithm === 'bucketed' ? `, bucketed (${policy.buckets} buckets)` : ''
        }`

/** The options that name a policy's keys. */
export const policyFlags = (policy: PolicyFields) =>
  policy.period !== undefined
    ? `--policy ${policy.name} --period ${policy.period} --time-zone ${policy.timeZone}`
    : policy.inFlight
      ? `--policy ${policy.name} --slot-ttl ${duration(policy.window)}`
      : `--policy ${policy.name} --window ${duration(policy.window)}${
          policy.algorithm === 'bucketed' ? ` --algorithm bucketed --buckets ${policy.buckets}` : ''
        }`

/** A window as its shortest exact duration string: 60000 is '1m'. */
export function duration(ms: number): string {
  for (const [unit, size] of [
    ['d', 86_400_000],
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`
  }
  return `${ms}ms`
}

/** Formatters by zone, for zonedTime: few zones are in use. */
const zoneFormats = new Map<string, Intl.DateTimeFormat>()

/**
 * An instant (epoch ms) as ISO 8601 in a time zone, with its offset there: 2026-12-07T00:00:00+13:00 (milliseconds
 * shown only when there are some).
 */
export function zonedTime(ms: number, timeZone: string): string {
  let format = zoneFormats.get(timeZone)
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', {
      timeZone,
      calendar: 'gregory',
      numberingSystem: 'latn',
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      timeZoneName: 'longOffset',
    })
    if (zoneFormats.size >= 64) zoneFormats.clear()
    zoneFormats.set(timeZone, format)
  }
  const part: Record<string, string> = {}
  for (const { type, value } of format.formatToParts(ms)) part[type] = value
  // longOffset reads 'GMT+13:00', or 'GMT' alone at a zero offset.
  const offset = (part.timeZoneName ?? 'GMT').slice(3) || '+00:00'
  const fraction = ms % 1000 === 0 ? '' : `.${String(((ms % 1000) + 1000) % 1000).padStart(3, '0')}`
  return `${part.year}-${part.month}-${part.day}T${part.hour}:${part.minute}:${part.second}${fraction}${offset}`
}

export const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`
export const units = (n: number) => `${n} ${n === 1 ? 'unit' : 'units'}`
export const slots = (n: number) => `${n} ${n === 1 ? 'slot' : 'slots'}`

export const table = (rows: string[][]) => columns(rows)

/** Rows as aligned columns, the last left ragged. */
export function columns(rows: string[][]): string {
  const widths: number[] = []
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length)
    })
  }
  return rows
    .map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd((widths[i] as number) + 2))).join(''))
    .join('\n')
}
