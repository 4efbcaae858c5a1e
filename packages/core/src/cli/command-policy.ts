// The policy a command names with its flags (--policy, --window, --concurrency, …), and the flag an option error
// of it is told under.
import { isFleetlimitError } from '../common/errors.js'
import { definePolicy, MAX_CONCURRENCY, MAX_LIMIT, type Policy, type PolicyOptions } from '../limiter/policy.js'
import type { Command } from './args.js'
import { CliError } from './cli-error.js'

export function policyOf(command: Command): Policy {
  const { name, window, limit, algorithm, buckets, concurrency, slotTtl } = command.policy
  if (concurrency !== undefined || slotTtl !== undefined) return inFlightPolicyOf(command.policy)
  if (name === undefined && limit === undefined) {
    throw new CliError('give the policy the key belongs to: --policy <name> --window <duration> (fleetlimit --help)', 2)
  }
  if (window === undefined) {
    throw new CliError('give the policy’s window: --window <duration>, such as 1m (fleetlimit --help)', 2)
  }
  const options = {
    limit: limit ?? MAX_LIMIT,
    window: /^\d+$/.test(window) ? Number(window) : window,
    ...(name !== undefined && { name }),
    ...(algorithm !== undefined && { algorithm }),
    ...(buckets !== undefined && { buckets }),
  } as PolicyOptions
  return asCliError(() => definePolicy(options))
}

/** An in-flight policy, named by --slot-ttl and --concurrency; a rate policy's flags beside them are refused. */
function inFlightPolicyOf({ name, window, limit, algorithm, buckets, concurrency, slotTtl }: Command['policy']) {
  const rate = [
    ['--window', window],
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
}

/** What names a policy's keys, as a stored key's policy says it. */
export const fieldsOf = (policy: Policy): PolicyFields => ({
  name: policy.name,
  window: policy.window,
  algorithm: policy.algorithm,
  ...(policy.buckets !== undefined && { buckets: policy.buckets }),
  ...(policy.concurrency !== undefined && { inFlight: true }),
})
