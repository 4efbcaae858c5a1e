import type { Logger } from '../common/logger.js'
import type { Store } from '../store/store.js'
import { type Policy, policyKeyName } from './policy.js'

/** What a policy name stands for on one store: its limits as said in a warning, and whether it was warned about. */
interface Named {
  readonly limits: string
  /** Its policyKeyName: two policies of one key name count in the same keys. */
  readonly keyName: string
  warned: boolean
}

/**
 * The policy names each store's limiters have used, with their limits: kept with the store (weakly), so a store
 * dropped takes its names with it. Bounded per store, since only a warning rests on it.
 */
const namesByStore = new WeakMap<Store, Map<string, Named>>()
const MAX_NAMES = 1_000

/** A policy's limits, as compared and said: two policies of one name should limit alike. */
function limitsOf(policy: Policy): string {
  return policy.concurrency !== undefined
    ? `${policy.concurrency} in flight (slots live ${policy.window} ms)`
    : `limit ${policy.limit} per ${policy.window} ms`
}

/**
 * Warns once per store and name when a limiter gives a policy name other limits than an earlier limiter on the
 * same store: with one window they share keys, each counting the other's requests under its own limit, and either
 * way clients see both under one name in the RateLimit headers.
 */
export function checkPolicyNames(store: Store, policies: readonly Policy[], logger: Logger): void {
  let names = namesByStore.get(store)
  if (names === undefined) {
    names = new Map()
    namesByStore.set(store, names)
  }
  for (const policy of policies) {
    const limits = limitsOf(policy)
    const earlier = names.get(policy.name)
    if (earlier === undefined) {
      if (names.size < MAX_NAMES) names.set(policy.name, { limits, keyName: policyKeyName(policy), warned: false })
      continue
    }
    if (earlier.limits === limits || earlier.warned) continue
    earlier.warned = true
    const shared = earlier.keyName === policyKeyName(policy)
    logger.warn(
      `fleetlimit: policy "${policy.name}" has two limits on one store (ERR_FLEETLIMIT_POLICY_CONFLICT): ${limits} ` +
        `here, ${earlier.limits} in a limiter built before. ${
          shared
            ? 'Both count in the same keys, each under its own limit, so each admits less than it says'
            : 'Their windows differ, so they count apart'
        }, and clients see both under one name in the RateLimit headers. Give each policy its own name, or define ` +
        'it once with definePolicy and share it.',
    )
  }
}
