// A call's plan: what every call of one key needs and that does not change between them (its windows, ids and store
// requests), built once per tenant (or route and tenant) and kept for the next calls.
import { checkAnchor } from '../common/calendar.js'
import { OptionError } from '../common/errors.js'
import type { Mutable } from '../common/mutable.js'
import { checkInteger, checkOptionNames, isPlainObject } from '../common/validate.js'
import type { StorePlan, WindowRequest } from '../store/store.js'
import type { Window } from './degraded.js'
import type { DenyEntry } from './deny-cache.js'
import { type KeyInput, windowKey } from './keys.js'
import type { ConsumeOptions } from './limiter-types.js'
import { checkCost, MAX_LIMIT, type Policy, policyKeyName } from './policy.js'
import { classIndexOf, shareKeysOf, shareLimit } from './priority-classes.js'

/**
 * What a call is decided on: its windows (one per policy) and its cost, with what the local tier and the store
 * look it up by. A plan kept for a key also keeps its store requests, and the store's own plan of them, once built.
 */
export interface CallPlan {
  readonly windows: readonly Window[]
  /** The first window's store key: the tenant's server and guard. */
  readonly key: string
  /** The windows' keys: what the local tier caches answers and leases under. */
  readonly id: string
  /** The limits the call is made under: a cached denial or a lease serves only calls with the same limits. */
  readonly tag: number | string
  /** The call's cost; with `costs`, the largest of them. */
  readonly cost: number
  /** The cost in each window, when they differ (a cost map); an in-flight window's is 1, its one slot. */
  readonly costs: readonly number[] | undefined
  requests: WindowRequest[] | undefined
  /** What the store compiled of `requests` (Store.plan), for stores that compile. */
  storePlan: StorePlan | undefined
  /** The local tier's cached denial found last for `id` (see DenialSlot). */
  denial: DenyEntry | undefined
}

export function newPlan(windows: readonly Window[], cost: number, costs?: readonly number[]): CallPlan {
  const first = windows[0] as Window
  const one = windows.length === 1
  return {
    windows,
    key: first.key,
    id: one ? first.key : windows.map((w) => w.key).join(' '),
    tag: one ? first.limit : windows.map((w) => w.limit).join(','),
    cost,
    costs,
    requests: undefined,
    storePlan: undefined,
    denial: undefined,
  }
}

/** A plan's store requests, built on its first call. */
export function requestsOf(plan: CallPlan): WindowRequest[] {
  plan.requests ??= windowRequests(plan.windows, plan.cost, plan.costs)
  return plan.requests
}

/** The store requests of windows at a cost (or a cost per window). */
export function windowRequests(windows: readonly Window[], cost: number, costs?: readonly number[]): WindowRequest[] {
  // Plain assignments, not conditional spreads.
  return windows.map(({ policy, key, limit, anchor, share }, i) => {
    const request: Mutable<WindowRequest> = {
      key,
      limit,
      windowMs: policy.window,
      cost: costs ? (costs[i] as number) : cost,
    }
    if (share !== undefined) {
      request.share = true
      return request
    }
    if (policy.buckets !== undefined) request.buckets = policy.buckets
    if (policy.blockFor > 0) request.blockMs = policy.blockFor
    if (policy.shadow) request.shadow = true
    if (policy.period !== undefined) {
      const calendar = { unit: policy.period, timeZone: policy.timeZone as string }
      request.period = anchor === undefined ? calendar : { ...calendar, anchor }
    }
    if (policy.concurrency !== undefined) {
      request.slots = true
      request.cost = 1
    }
    return request
  })
}

/** Tenants whose default plan a limiter keeps built: about 200 bytes each. */
const CACHED_PLANS = 16_384

export interface CallPlans {
  /**
   * The windows a key input counts in: one per policy, with its store key, this call's limit and anchor; with a
   * class (`priority`, an index) of a policy with priorities, that class's share window last.
   */
  windowsOf(
    input: KeyInput,
    limits: readonly number[] | undefined,
    anchors?: readonly (number | undefined)[],
    priority?: number,
  ): Window[]
  /** Every store key of a key input: its policies' windows, then each priority class's share window. */
  storeKeysOf(input: KeyInput): string[]
  /** The class index a call's `priority` names (the lowest for none); undefined for a limiter without classes. */
  priorityOf(value: unknown): number | undefined
  /** A call's plan: kept per key for a call with no options; the cost must fit in each of its limits. */
  planOf(key: KeyInput, options: ConsumeOptions | undefined, accepted: readonly string[]): CallPlan
  /** A call's limits, one per policy, or undefined for the policies' own. */
  limitsOf(value: unknown): readonly number[] | undefined
  /** A call's anchors, one per policy (unset for a policy with none), or undefined for the policies' own starts. */
  anchorsOf(value: unknown): readonly (number | undefined)[] | undefined
}

/**
 * The plans of one limiter's calls. A call with no options gets its key's plan (keys encoded and checked once),
 * kept for the next calls up to CACHED_PLANS of each kind (by tenant; by route and tenant); past it, one of the
 * first kept is dropped.
 */
export function createCallPlans(
  policies: readonly [Policy, ...Policy[]],
  defaultCost: number,
  checkCallCost: (value: unknown) => number,
): CallPlans {
  const keyNames = policies.map(policyKeyName)
  const policyNames = policies.map((p) => p.name)
  // The policy with priority classes (at most one per limiter), and the class of a call that names none.
  const ranked = policies.findIndex((p) => p.priorities !== undefined)
  const classes = policies[ranked]?.priorities
  const defaultClass = classes ? classes.length - 1 : undefined
  const windowsOf = (
    input: KeyInput,
    limits: readonly number[] | undefined,
    anchors?: readonly (number | undefined)[],
    priority?: number,
  ): Window[] => {
    const windows = policies.map((policy, i) => {
      const key = windowKey(keyNames[i] as string, policy.scope, input)
      const window: Mutable<Window> = { policy, key, limit: limits ? (limits[i] as number) : policy.limit }
      const anchor = anchors?.[i]
      if (anchor !== undefined) window.anchor = anchor
      return window
    })
    if (classes === undefined || priority === undefined) return windows
    const main = windows[ranked] as Window
    const keys = shareKeysOf(main.key, keyNames[ranked] as string, classes)
    const { share } = classes[priority] as { share: number }
    windows.push({
      policy: main.policy,
      key: keys[priority] as string,
      limit: shareLimit(share, main.limit),
      share: { index: priority, classes, keys },
    })
    return windows
  }
  const priorityOf = (value: unknown): number | undefined => {
    if (classes !== undefined) return classIndexOf(classes, value)
    if (value !== undefined) {
      throw new OptionError('priority', value, 'no priority: give a policy `priorities` to call with classes')
    }
    return undefined
  }
  // The calendar policies an anchor applies to: weeks and months (a day starts at midnight).
  const anchored = policies.filter((p) => p.period === 'week' || p.period === 'month').map((p) => p.name)

  const byTenant = new Map<string, CallPlan>()
  // By route, then tenant: no key string is built to look a plan up. `undefined` is the route of `{ tenant }`.
  const byRoute = new Map<string | undefined, Map<string, CallPlan>>()
  let routePlans = 0

  function tenantPlan(key: string): CallPlan {
    let plan = byTenant.get(key)
    if (plan === undefined) {
      plan = newPlan(windowsOf(key, undefined, undefined, defaultClass), defaultCost)
      if (byTenant.size >= CACHED_PLANS) byTenant.delete(byTenant.keys().next().value as string)
      byTenant.set(key, plan)
    }
    return plan
  }
  function routePlan(key: Exclude<KeyInput, string>): CallPlan {
    const tenant: unknown = key?.tenant
    const route: unknown = key?.route
    // Anything else is refused by windowsOf, with the error it names.
    if (typeof tenant !== 'string' || (route !== undefined && typeof route !== 'string')) {
      return newPlan(windowsOf(key, undefined, undefined, defaultClass), defaultCost)
    }
    let tenants = byRoute.get(route)
    let plan = tenants?.get(tenant)
    if (plan !== undefined) return plan
    plan = newPlan(windowsOf(key, undefined, undefined, defaultClass), defaultCost)
    if (routePlans >= CACHED_PLANS) dropOldestRoutePlan()
    if (tenants === undefined) {
      tenants = new Map()
      byRoute.set(route, tenants)
    }
    tenants.set(tenant, plan)
    routePlans++
    return plan
  }
  function dropOldestRoutePlan() {
    const [route, tenants] = byRoute.entries().next().value as [string | undefined, Map<string, CallPlan>]
    tenants.delete(tenants.keys().next().value as string)
    if (tenants.size === 0) byRoute.delete(route)
    routePlans--
  }

  function limitsOf(value: unknown): readonly number[] | undefined {
    if (value === undefined) return undefined
    if (typeof value === 'number' && policies.length === 1) return [checkInteger(value, 'limit', 1, MAX_LIMIT)]
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new OptionError(
        'limit',
        value,
        policies.length === 1
          ? `a whole number from 1 to ${MAX_LIMIT}`
          : `a map from policy name (${policyNames.join(', ')}) to limit: this limiter has several policies`,
      )
    }
    // A Map's entries are not properties: read as an object it would name no limit, silently.
    if (!isPlainObject(value)) {
      throw new OptionError('limit', value, `a plain object from policy name (${policyNames.join(', ')}) to limit`)
    }
    checkOptionNames(value, 'limit', policyNames)
    // Own entries only: a policy named `constructor` or `toString` that the map leaves out keeps its own limit.
    const byName = value as Record<string, unknown>
    return policies.map((p) => {
      const given = Object.hasOwn(byName, p.name) ? byName[p.name] : undefined
      return given === undefined ? p.limit : checkInteger(given, `limit.${p.name}`, 1, MAX_LIMIT)
    })
  }

  function anchorsOf(value: unknown): readonly (number | undefined)[] | undefined {
    if (value === undefined) return undefined
    if (anchored.length === 0) {
      throw new OptionError('anchor', value, 'no anchor: this limiter has no weekly or monthly policy (`period`)')
    }
    if (typeof value !== 'object' || value === null) {
      // One anchor for every weekly and monthly policy, each checked against its unit.
      return policies.map((p) =>
        p.period === 'week' || p.period === 'month' ? checkAnchor(value, p.period, 'anchor') : undefined,
      )
    }
    if (!isPlainObject(value)) {
      throw new OptionError(
        'anchor',
        value,
        `a day number, or a plain object from policy name (${anchored.join(', ')}) to one`,
      )
    }
    checkOptionNames(value, 'anchor', anchored)
    const byName = value as Record<string, unknown>
    return policies.map((p) => {
      const given = Object.hasOwn(byName, p.name) ? byName[p.name] : undefined
      return given === undefined || p.period === undefined
        ? undefined
        : checkAnchor(given, p.period, `anchor.${p.name}`)
    })
  }

  /** A cost map's cost in each window: a policy left out takes its own; an in-flight window takes its one slot. */
  function costsOf(value: object, limits: readonly number[] | undefined): number[] {
    if (!isPlainObject(value)) {
      throw new OptionError('cost', value, `a plain object from policy name (${policyNames.join(', ')}) to cost`)
    }
    checkOptionNames(value, 'cost', policyNames)
    const byName = value as Record<string, unknown>
    return policies.map((p, i) => {
      if (p.concurrency !== undefined) return 1
      const given = Object.hasOwn(byName, p.name) ? byName[p.name] : undefined
      return given === undefined ? p.cost : checkCost(given, `cost.${p.name}`, limits ? (limits[i] as number) : p.limit)
    })
  }

  return {
    windowsOf,
    // A reset forgets the classes' shares too: a share's units count only while its policy's window holds them.
    storeKeysOf: (input) => {
      const windows = windowsOf(input, undefined, undefined, classes && 0)
      return [...windows.map((w) => w.key), ...(windows.at(-1)?.share?.keys.slice(1) ?? [])]
    },
    priorityOf,
    limitsOf,
    anchorsOf,
    planOf(key, options, accepted) {
      if (options === undefined) return typeof key === 'string' ? tenantPlan(key) : routePlan(key)
      checkOptionNames(options, 'options', accepted)
      const limits = limitsOf(options.limit)
      const anchors = anchorsOf(options.anchor)
      const priority = priorityOf(options.priority)
      if (typeof options.cost === 'object' && options.cost !== null && policies.length > 1) {
        const costs = costsOf(options.cost, limits)
        // A share window counts what its policy's window counts.
        if (priority !== undefined) costs.push(costs[ranked] as number)
        return newPlan(windowsOf(key, limits, anchors, priority), Math.max(...costs), costs)
      }
      const cost = options.cost === undefined ? defaultCost : checkCallCost(options.cost)
      if (limits) checkCost(cost, 'cost', Math.min(...limits.filter((_, i) => !policies[i]?.concurrency)))
      return newPlan(windowsOf(key, limits, anchors, priority), cost)
    },
  }
}
