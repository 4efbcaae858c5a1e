// Priority classes: a policy's classes and their shares, checked once, the class a call names, and the keys and
// limits of the classes' share windows.
import { OptionError } from '../common/errors.js'
import { checkOptionNames, isPlainObject } from '../common/validate.js'

/** One priority class of a policy: its name and the share of the limit it keeps for itself. */
export interface PriorityClass {
  /** What calls name it by (`priority: 'batch'`): 1 to 64 letters, digits, `.`, `_` or `-`. */
  readonly name: string
  /** Its share of the limit, in (0, 1]: floor(share * limit) units per window are kept for it while it waits. */
  readonly share: number
}

/** The most classes a policy may have: each is a key, and a waiting class holds the others in one store call. */
export const MAX_PRIORITIES = 8

const CLASS_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/
// Shares are written as decimals (0.7 + 0.2 + 0.1 is 1.0000000000000002 in doubles).
const SUM_SLACK = 1e-9

/** The classes of `priorities`, checked and frozen, in rank order (the first is the highest). */
export function resolvePriorities(value: unknown): readonly PriorityClass[] {
  const expected = `an array of 2 to ${MAX_PRIORITIES} classes { name, share }, highest first, shares summing to at most 1`
  if (!Array.isArray(value) || value.length < 2 || value.length > MAX_PRIORITIES) {
    throw new OptionError('priorities', value, expected)
  }
  const names = new Set<string>()
  let sum = 0
  const classes = value.map((given: unknown, i) => {
    if (!isPlainObject(given)) throw new OptionError(`priorities[${i}]`, given, 'an object { name, share }')
    checkOptionNames(given, `priorities[${i}]`, ['name', 'share'])
    const { name, share } = given as { name?: unknown; share?: unknown }
    if (typeof name !== 'string' || !CLASS_NAME.test(name)) {
      throw new OptionError(
        `priorities[${i}].name`,
        name,
        '1 to 64 letters, digits, `.`, `_` or `-`, starting with a letter or digit',
      )
    }
    if (names.has(name)) throw new OptionError(`priorities[${i}].name`, name, 'a name no other class has')
    names.add(name)
    if (typeof share !== 'number' || !Number.isFinite(share) || share <= 0 || share > 1) {
      throw new OptionError(`priorities[${i}].share`, share, 'a number above 0 and at most 1, such as 0.7')
    }
    sum += share
    return Object.freeze({ name, share })
  })
  if (sum > 1 + SUM_SLACK) {
    throw new OptionError(
      'priorities',
      classes.map((c) => `${c.name} ${c.share}`).join(', '),
      `shares summing to at most 1 (these sum to ${Number(sum.toFixed(6))}): lower one`,
    )
  }
  return Object.freeze(classes)
}

/** A policy's priority classes, checked: on a sliding log of a rate only (each class's share is a log beside it). */
export function checkPolicyPriorities(
  value: unknown,
  policy: { algorithm: 'sliding-log' | 'bucketed'; calendar: boolean; shadow: boolean },
): readonly PriorityClass[] | undefined {
  if (value === undefined) return undefined
  const refuse = (why: string) => {
    throw new OptionError('priorities', value, `no priorities ${why}`)
  }
  if (policy.algorithm === 'bucketed') refuse("with algorithm 'bucketed': a class's share is kept as a sliding log")
  if (policy.calendar) refuse('on a calendar policy (`period`): give the classes to a sliding window')
  if (policy.shadow) refuse('on a shadow policy: it never denies, so no class waits')
  return resolvePriorities(value)
}

/**
 * The index of the class a call names (`priority`), or the last (lowest) class for a call that names none: an
 * unmarked call never takes a higher class's reserve.
 */
export function classIndexOf(classes: readonly PriorityClass[], value: unknown): number {
  if (value === undefined) return classes.length - 1
  const index = typeof value === 'string' ? classes.findIndex((c) => c.name === value) : -1
  if (index < 0) {
    throw new OptionError('priority', value, `one of the policy's classes: ${classes.map((c) => c.name).join(', ')}`)
  }
  return index
}

/**
 * The policy key name of a class's share window: the policy's own (`name~sl3-<window>`), then `~p-` and the class.
 * A policy name holds no `~`, so no policy's key name is a share's, and the tenant (the hash tag) and route follow
 * as in the policy's keys: a share key lives in its tenant's slot and collides with no tenant's key.
 */
export const shareKeyName = (policyKeyName: string, className: string) => `${policyKeyName}~p-${className}`

/** The limit of a class's share window under a call's limit: floor(share * limit). */
export const shareLimit = (share: number, limit: number) => Math.floor(share * limit + SUM_SLACK)

/**
 * The share window of a call of one class: its key, and the keys of every class's share window for the same
 * tenant and route (what a waiter holds), by class index.
 */
export interface ShareWindow {
  readonly index: number
  readonly classes: readonly PriorityClass[]
  readonly keys: readonly string[]
}

/** The share windows' keys of a policy window's key (`windowKey` starts with the policy's key name). */
export function shareKeysOf(windowKey: string, policyKeyName: string, classes: readonly PriorityClass[]): string[] {
  const rest = windowKey.slice(policyKeyName.length)
  return classes.map((c) => shareKeyName(policyKeyName, c.name) + rest)
}
