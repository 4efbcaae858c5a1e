// Priority classes at work: a call's decision with its class's share window in it, and what a waiting class holds
// so that no lower class is admitted ahead of it, in any process.
import type { HoldRequest, Store, WindowResult } from '../store/store.js'
import { combine, type Decision, toDecision } from './decision.js'
import type { Window } from './degraded.js'
import type { PriorityClass, ShareWindow } from './priority-classes.js'

// Whether a denied call's class had room for its cost in its own share: it then holds the other classes too.
const underShare = new WeakMap<Decision, boolean>()

/**
 * A call's decision with its share window's answer in it: denied when the share window denies (its class is held
 * and over its share), with the longer wait. `priority` names the class.
 */
export function withShare(decision: Decision, share: WindowResult, cost: number, className: string): Decision {
  let merged: Decision = { ...decision, priority: className }
  if (!share.allowed) {
    merged = {
      ...merged,
      allowed: false,
      remaining: Math.min(decision.remaining, share.remaining),
      retryAfterMs: Math.max(decision.allowed ? 0 : decision.retryAfterMs, share.retryAfterMs),
    }
  }
  if (!merged.allowed) underShare.set(merged, share.remaining >= cost)
  return merged
}

/**
 * The decision the store's results for `windows` make: one per policy, combined, then the share window's answer (a
 * call of a class) merged in. `costs`: the cost in each window, when they differ.
 */
export function decisionOfWindows(
  results: readonly WindowResult[],
  windows: readonly Window[],
  cost: number,
  costs?: readonly number[],
): Decision {
  const n = windows.length - 1
  const share = (windows[n] as Window).share
  const decisionOf = (result: WindowResult, i: number) => {
    const { policy, limit } = windows[i] as Window
    return toDecision(result, 'store', policy, limit)
  }
  if (share === undefined) return combine(results.map(decisionOf))
  const main = combine(results.slice(0, n).map(decisionOf))
  const className = (share.classes[share.index] as PriorityClass).name
  return withShare(main, results[n] as WindowResult, costs ? (costs[n] as number) : cost, className)
}

/** The least a hold outlasts a waiter's wait by, and its share of the window: a waiter's wake-up takes time. */
const MARGIN_MS = 20
const MARGIN_OF_WINDOW = 0.1

/**
 * What a waiter of class `share.index` denied with `denials` holds, and for how long: every lower class's share
 * window, and while its own class is under its share, every other class's too (so a lower class keeps its reserve
 * as well), for the longest wait plus a margin. Undefined when there is nothing to hold.
 */
export function waitHolds(
  share: ShareWindow,
  denials: readonly Decision[],
  windowMs: number,
): { requests: HoldRequest[]; ms: number } | undefined {
  if (denials.length === 0) return undefined
  const others = denials.some((d) => underShare.get(d) === true)
  const requests: HoldRequest[] = []
  share.keys.forEach((key, j) => {
    if (j > share.index || (others && j !== share.index)) requests.push({ key, windowMs })
  })
  if (requests.length === 0) return undefined
  const wait = Math.max(...denials.map((d) => d.retryAfterMs))
  const ms = Math.ceil(wait + Math.max(MARGIN_MS, MARGIN_OF_WINDOW * windowMs))
  return { requests, ms }
}

/**
 * What an acquire queue calls when a batch of a class is denied: the classes it holds (see waitHolds) are capped to
 * their shares, in every process, until its waiters may be admitted, so the room that frees goes to them. One hold
 * per batch (per sleep), never from consume(), which does not wait.
 */
export function createClassHolds(
  store: Pick<Store, 'hold'>,
  askStore: <T>(windows: readonly Window[], send: () => Promise<T>) => Promise<T>,
) {
  return ({ plan }: { plan: { readonly windows: readonly Window[] } }, denials: readonly Decision[]): void => {
    const window = plan.windows[plan.windows.length - 1] as Window
    if (window.share === undefined) return
    const holds = waitHolds(window.share, denials, window.policy.window)
    if (holds === undefined) return
    // A failed hold leaves the classes uncapped for this wait: the waiter still wakes at its exact wait.
    void askStore(plan.windows, () => store.hold(holds.requests, holds.ms)).catch(() => {})
  }
}
