// The policy a command names with its flags (--policy, --window, --concurrency, …), and the flag an option error
// of it is told under.
import { type Calendar, checkAnchor, type PeriodUnit } from '../common/calendar.js'
import { isFleetlimitError } from '../common/errors.js'
import { definePolicy, MAX_CONCURRENCY, MAX_LIMIT, type Policy, type PolicyOptions } from '../limiter/policy.js'
import type { Command } from './args.js'
import { CliError } from './cli-error.js'

export function policyOf(command: Command): Policy {
  const { name, window, limit, algorithm, buckets, concurrency, slotTtl, period, timeZone } = command.policy
  if (concurrency !== undefined || slotTtl !== undefined) return inFlightPolicyOf(command.policy)
  if (name === undefined && limit === undefined) {
    throw new CliError('give the policy the key belongs to: --policy <name> --window <duration> (fleetlimit --help)', 2)
  }
  if (window === undefined && period === undefined) {
    throw new CliError(
      timeZone === undefined
        ? 'give the policy’s window: --window <duration>, such as 1m (fleetlimit --help)'
        : 'give the calendar policy’s period: --period day, week or month (fleetlimit --help)',
      2,
    )
  }
  // definePolicy refuses a window beside a period, and a time zone without one, naming the flag.
  const options = {
    limit: limit ?? MAX_LIMIT,
    ...(window !== undefined && { window: /^\d+$/.test(window) ? Number(window) : window }),
    ...(name !== undefined && { name }),
    ...(algorithm !== undefined && { algorithm }),
    ...(buckets !== undefined && { buckets }),
    ...(period !== undefined && { period }),
    ...(timeZone !== undefined && { timeZone }),
  } as PolicyOptions
  return asCliError(() => definePolicy(options))
}

/** An in-flight policy, named by --slot-ttl and --concurrency; a rate policy's flags beside them are refused. */
function inFlightPolicyOf(args: Command['policy']) {
  const { name, window, limit, algorithm, buckets, concurrency, slotTtl, period, timeZone } = args
  const rate = [
    ['--window', window],
    ['--period', period],
    ['--time-zone', timeZone],
    ['--limit', limit],
    ['--algorithm', algorithm],
    ['--buckets', buckets],
  ].find(([, value]) => value !== undefined)?.[0]
  if (rate !== undefined) {
    throw new CliError(
      `${rate} is a rate policy’s: an in-flight policy is named by --slot-ttl (its slot life) and --concurrency ` +
        '(fleetlimit --help)',
      2,
    )
  }
  if (name === undefined && concurrency === undefined) {
    throw new CliError(
      'give the policy the key belongs to: --policy <name> --slot-ttl <duration> (fleetlimit --help)',
      2,
    )
  }
  const options = {
    concurrency: concurrency ?? MAX_CONCURRENCY,
    ...(slotTtl !== undefined && { slotTtlMs: /^\d+$/.test(slotTtl) ? Number(slotTtl) : slotTtl }),
    ...(name !== undefined && { name }),
  } as PolicyOptions
  return asCliError(() => definePolicy(options))
}

/** The command-line flag of each policy option, for the option errors of definePolicy. */
const FLAGS: Readonly<Record<string, string>> = {
  name: '--policy',
  window: '--window',
  limit: '--limit',
  algorithm: '--algorithm',
  buckets: '--buckets',
  concurrency: '--concurrency',
  slotTtlMs: '--slot-ttl',
  period: '--period',
  timeZone: '--time-zone',
  anchor: '--anchor',
  'redisStore.prefix': '--prefix',
}

/** Runs `make`; an option error it throws becomes a usage error that names the flag. */
export function asCliError<T>(make: () => T): T {
  try {
    return make()
  } catch (error) {
    if (!isFleetlimitError(error)) throw error
    const option = (error as { option?: unknown }).option
    const flag = typeof option === 'string' ? FLAGS[option] : undefined
    throw new CliError(flag ? error.message.replace(/option `[^`]+`/, flag) : error.message, 2)
  }
}

export type PolicyFields = Pick<Policy, 'name' | 'window' | 'algorithm'> & {
  readonly buckets?: number | undefined
  /** An in-flight policy: its window is its slot life. */
  readonly inFlight?: true | undefined
  /** A calendar policy: its count starts over at each period's start in the zone (its window is the longest period). */
  readonly period?: PeriodUnit | undefined
  readonly timeZone?: string | undefined
}

/** What names a policy's keys, as a stored key's policy says it. */
export const fieldsOf = (policy: Policy): PolicyFields => ({
  name: policy.name,
  window: policy.window,
  algorithm: policy.algorithm,
  ...(policy.buckets !== undefined && { buckets: policy.buckets }),
  ...(policy.concurrency !== undefined && { inFlight: true }),
  ...(policy.period !== undefined && { period: policy.period, timeZone: policy.timeZone }),
})

/**
 * The calendar a peek decides the next call in: the policy's period and zone, and --anchor (refused on a policy that
 * is no calendar, or out of its unit's range); undefined for a window.
 */
export function calendarOf(command: Command, fields: PolicyFields): Calendar | undefined {
  const { anchor } = command
  if (fields.period === undefined || fields.timeZone === undefined) {
    if (anchor !== undefined)
      throw new CliError('--anchor is a calendar policy’s: give --period (fleetlimit --help)', 2)
    return undefined
  }
  const unit = fields.period
  return {
    unit,
    timeZone: fields.timeZone,
    ...(anchor !== undefined && { anchor: asCliError(() => checkAnchor(anchor, unit, 'anchor')) }),
  }
}
