// The live keys a command looks for before it acts: a policy's (to refuse a mistyped one) and a tenant's other
// routes (the key most often meant when the one named is empty).
import { encodeKeyPart } from '../limiter/keys.js'
import { type Policy, policyKeyName } from '../limiter/policy.js'
import type { Command } from './args.js'
import { CliError } from './cli-error.js'
import type { Connected } from './connect.js'
import { duration, policyFlags } from './output-format.js'
import { scanKeys } from './scan.js'
import { globLiteral, parseStoredKey, type StoredKey } from './stored-keys.js'

/**
 * Refuses a policy that no live key has: most often a mistyped name or window, which would name a key nobody
 * counts under. The policies that do have keys are listed, as the options that name them.
 */
export async function checkKnown(policy: Policy, prefix: string, connected: Connected): Promise<void> {
  const servers = connected.scanned()
  for await (const _ of scanKeys(servers, `${globLiteral(prefix)}:${policyKeyName(policy)}:*`)) return
  const live = new Set<string>()
  let looked = 0
  for await (const redisKey of scanKeys(servers, `${globLiteral(prefix)}:*`)) {
    const stored = parseStoredKey(redisKey, prefix)
    if (stored) live.add(policyFlags(stored.policy))
    if (live.size >= 10 || ++looked >= 100_000) break
  }
  const known = live.size === 0 ? 'the prefix has none' : `live policies: ${[...live].join('; ')}`
  const [kind, window] = policy.concurrency === undefined ? ['policy', 'window'] : ['in-flight policy', 'slot life']
  const named =
    policy.period === undefined
      ? `${kind} "${policy.name}" with ${window} ${duration(policy.window)}`
      : `calendar policy "${policy.name}" per ${policy.period} in ${policy.timeZone}`
  throw new CliError(`unknown ${named}: no live key of it under prefix "${prefix}"; ${known} (--force acts anyway)`, 2)
}

/** The tenant's other live keys of the policy (other routes, or none): at most 10. */
export async function otherKeys(policy: Policy, command: Command, connected: Connected, redisKey: string) {
  const tenant = encodeKeyPart(command.tenant as string)
  const pattern = `${globLiteral(command.prefix)}:${policyKeyName(policy)}:{${globLiteral(tenant)}}*`
  const found = new Map<string, StoredKey>()
  for await (const key of scanKeys(connected.scanned(), pattern)) {
    const stored = parseStoredKey(key, command.prefix)
    if (stored && key !== redisKey) found.set(key, stored)
    if (found.size === 10) break
  }
  return [...found.values()].sort(byKey)
}

export const byKey = (a: StoredKey, b: StoredKey) => (a.redisKey < b.redisKey ? -1 : 1)
