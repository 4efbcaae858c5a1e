import type { PeriodUnit } from '../common/calendar.js'
import { decodeKeyPart } from '../limiter/keys.js'
import { type Algorithm, parsePolicyKeyName } from '../limiter/policy.js'

/** A window key (or an in-flight policy's slot key) found in Redis, read back into what named it: `{prefix}:{policy key name}:{tenant}[:route]`. */
export interface StoredKey {
  /** The whole Redis key. */
  readonly redisKey: string
  /** The key without the prefix: what a store is asked about. */
  readonly key: string
  readonly policy: {
    readonly name: string
    readonly window: number
    readonly algorithm: Algorithm
    readonly buckets?: number
    /** An in-flight policy's slot key: `window` is its slot life. */
    readonly inFlight?: true
    /** A calendar policy's period key: its unit and zone (`window` is its longest period). */
    readonly period?: PeriodUnit
    readonly timeZone?: string
  }
  /** The tenant, decoded; undefined when the key holds a hash of it (a tenant longer than 128 characters). */
  readonly tenant: string | undefined
  readonly route?: string | undefined
  readonly hasRoute: boolean
}

/** The window key `redisKey` names under `prefix`; undefined for any other key (a refund marker, another app's). */
export function parseStoredKey(redisKey: string, prefix: string): StoredKey | undefined {
  if (!redisKey.startsWith(`${prefix}:`)) return undefined
  const key = redisKey.slice(prefix.length + 1)
  const match = /^([^:]+):\{([^{}:]+)\}(?::([^:{}]+))?$/.exec(key)
  if (!match) return undefined
  const [, keyName, tenant, route] = match as unknown as [string, string, string, string?]
  const policy = parsePolicyKeyName(keyName)
  if (!policy) return undefined
  return {
    redisKey,
    key,
    policy,
    tenant: decodeKeyPart(tenant),
    ...(route !== undefined && { route: decodeKeyPart(route) }),
    hasRoute: route !== undefined,
  }
}

/** `text` as a SCAN MATCH pattern that matches it literally. */
export function globLiteral(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&')
}
