// The decision pipeline of one limiter: plan -> local tier -> guarded store call -> receipt -> count and events.
// Every consume and acquire passes here; a memory store's answer comes back in the same tick.
import type { Emitter } from '../common/emitter.js'
import type { Mutable } from '../common/mutable.js'
import type { Deadline } from '../store/guarded-call.js'
import type {
  LeaseRequest,
  RefundRequest,
  SlotRequest,
  Store,
  StorePlan,
  WindowRequest,
  WindowResult,
} from '../store/store.js'
import type { Receipt } from './after-call.js'
import { type CallPlan, requestsOf, windowRequests } from './call-plans.js'
import { type Decision, enforce, toDecision } from './decision.js'
import type { DegradedMode, Window } from './degraded.js'
import type { LimiterEvents } from './limiter-types.js'
import type { LocalTier } from './local-tier.js'
import { decisionOfWindows } from './priorities.js'
import { leaseReceipt, Receipted, refundRequestOf, WindowReceipt } from './receipts.js'
import type { StoreCaller } from './store-caller.js'

/** A decision with what a refund, a settle or a release of it changes. */
type Made = { readonly decision: Decision; readonly receipt?: Receipt | undefined }

export interface DecisionCounters {
  decisions: number
  allowed: number
  denied: number
  shadowDenied: number
  degraded: number
}

export interface DecideDeps {
  readonly store: Store
  readonly caller: StoreCaller
  readonly tier: LocalTier | undefined
  readonly degraded: DegradedMode
  readonly failClosed: boolean
  readonly counters: DecisionCounters
  readonly events: Emitter<LimiterEvents>
  /** What receipts are stamped with: a refund through another limiter finds none. */
  readonly owner: object
  /** The window of a lease (the one policy of a limiter with leases). */
  readonly leaseWindowMs: number
  /** Whether any policy is in flight: a decision's receipt then carries slots. */
  readonly slots: boolean
  /**
   * Whether calls take the store's answer at once (Store.decideNow, a store in this process), with no promise in
   * between: not with leases or slots, whose calls the store answers by promise.
   */
  readonly direct: boolean
  /** A decision that holds slots: gets its `extend`. */
  holdSlots(decision: Decision): void
}

export interface Decide {
  /** Decides a call of `plan` at `cost` (with `costs`, a cost per window). */
  decide(plan: CallPlan, cost: number, costs: readonly number[] | undefined): Promise<Decision>
  /** An admission whose units count `transitMs` longer (see Lease). */
  decideInTransit(plan: CallPlan, cost: number, transitMs: number): Promise<Decision>
}

const decisionOf = (result: WindowResult, { policy, limit }: Window) => toDecision(result, 'store', policy, limit)

/** The decision of several windows' results (or of one in flight), and its receipt. */
function madeOf(plan: CallPlan, results: readonly WindowResult[], cost: number, costs?: readonly number[]): Made {
  const { windows, id } = plan
  const decision = decisionOfWindows(results, windows, cost, costs)
  const requests: RefundRequest[] = []
  const names: string[] = []
  const limits: number[] = []
  const units: number[] = []
  const slotRequests: SlotRequest[] = []
  for (let i = 0; i < results.length; i++) {
    const { recorded } = results[i] as WindowResult
    if (recorded === undefined) continue
    const window = windows[i] as Window
    if (window.policy.concurrency !== undefined) {
      slotRequests.push({ key: window.key, slot: recorded })
      continue
    }
    requests.push(refundRequestOf(window, recorded))
    names.push(window.policy.name)
    // A share window may hold more than its limit (it lends): a settle is not over a limit by it.
    limits.push(window.share === undefined ? window.limit : Number.POSITIVE_INFINITY)
    units.push(costs ? (costs[i] as number) : cost)
  }
  if (requests.length === 0 && slotRequests.length === 0) return { decision }
  const receipt: Mutable<Receipt> = { id, requests, units: cost, names, limits }
  if (costs) receipt.costs = units
  if (slotRequests.length > 0) receipt.slots = slotRequests
  return { decision, receipt }
}

/**
 * Promises of decisions, the last one kept: the calls of a denied hot key in one millisecond get the same cached
 * answer (local-tier.ts agedDenial), and so share its promise.
 */
function lastAnswerKept(): (decision: Decision) => Promise<Decision> {
  let last: Decision | undefined
  let answer: Promise<Decision> | undefined
  return (decision) => {
    if (decision !== last || answer === undefined) {
      last = decision
      answer = Promise.resolve(decision)
    }
    return answer
  }
}

/**
 * A store's two decision calls, deadline first as the guard makes them: made once per limiter, so that a call passes
 * its plan or its requests with no closure of its own.
 */
function storeCallsOf(store: Store) {
  const decide = store.decide?.bind(store)
  return {
    decidePlan: decide && ((deadline: Deadline, plan: StorePlan) => decide(plan, deadline)),
    consumeRequests: (deadline: Deadline, requests: WindowRequest[]) => store.consume(requests, deadline),
  }
}

export function createDecide(deps: DecideDeps): Decide {
  const { store, caller, tier, counters, events, owner } = deps
  const compile = store.plan?.bind(store)
  const decideNow = deps.direct ? store.decideNow?.bind(store) : undefined
  const { decidePlan, consumeRequests } = storeCallsOf(store)
  // One lease call per key at a time: calls that arrive meanwhile wait for it and take its units.
  const leasing = new Map<string, Promise<unknown>>()
  const answerDenied = lastAnswerKept()

  /**
   * Every decision a caller gets passes here: counted, reported, and (if it recorded units) refundable. `fresh`
   * says that `made` was just built, so it carries no receipt yet (a check that costs as much as the stamp).
   */
  function count(made: Decision, receipt?: Receipt, fresh = false): Decision {
    const decision = enforce(made)
    counters.decisions++
    if (decision.allowed) counters.allowed++
    else counters.denied++
    if (decision.shadowDenied) counters.shadowDenied++
    if (receipt && decision.allowed && (fresh || !Receipted.has(decision))) {
      new Receipted(decision, receipt, owner)
      if (receipt.slots) deps.holdSlots(decision)
    }
    if (events.has('decision')) events.emit('decision', decision)
    return decision
  }

  async function degrade(plan: CallPlan, cost: number, error: unknown): Promise<Decision> {
    const failure = caller.failure(error, plan.key)
    if (deps.failClosed) throw failure
    counters.degraded++
    const decision = await deps.degraded.decide(plan.windows, cost)
    events.emit('degraded', decision)
    return count(decision)
  }

  /**
   * The store's answer for a call: at once from a store in this process, else a guarded call under the deadline;
   * of the plan the store compiled, when it compiles.
   */
  function ask(
    plan: CallPlan,
    cost: number,
    costs: readonly number[] | undefined,
    sentAt: number | undefined,
  ): WindowResult[] | Promise<WindowResult[]> {
    const own = cost === plan.cost && costs === plan.costs
    const requests = own ? requestsOf(plan) : windowRequests(plan.windows, cost, costs)
    if (compile !== undefined && (decideNow !== undefined || decidePlan !== undefined)) {
      let storePlan = own ? plan.storePlan : undefined
      if (storePlan === undefined) {
        storePlan = compile(requests)
        if (own) plan.storePlan = storePlan
      }
      // The tier's clock is performance.now(): the store may take its reading as the decision's time.
      if (decideNow !== undefined) return caller.askNow(decideNow, storePlan, sentAt)
      if (decidePlan !== undefined) return caller.ask(plan.key, decidePlan, storePlan)
    }
    return caller.ask(plan.key, consumeRequests, requests)
  }

  /** Counts a decision, and lets the local tier remember a denial. */
  function answer(
    plan: CallPlan,
    cost: number,
    costs: readonly number[] | undefined,
    decision: Decision,
    receipt: Receipt | undefined,
    sentAt: number,
    fresh: boolean,
  ): Decision {
    if (costs === undefined) tier?.remember(plan.id, cost, decision, sentAt, plan.tag)
    return count(decision, receipt, fresh)
  }

  /** answer() of a store's results: one window's, the common call, with no object in between. */
  function answerResults(
    plan: CallPlan,
    cost: number,
    costs: readonly number[] | undefined,
    results: readonly WindowResult[],
    sentAt: number,
    fresh: boolean,
  ): Decision {
    if (results.length > 1 || deps.slots) {
      const { decision, receipt } = madeOf(plan, results, cost, costs)
      return answer(plan, cost, costs, decision, receipt, sentAt, fresh)
    }
    const result = results[0] as WindowResult
    const window = plan.windows[0] as Window
    const { recorded } = result
    const receipt = recorded === undefined ? undefined : new WindowReceipt(plan.id, cost, window, recorded)
    return answer(plan, cost, costs, decisionOf(result, window), receipt, sentAt, fresh)
  }

  /** One store call reserves `size` units; this call takes `cost` of them, the local tier keeps the rest. */
  async function leaseFor(plan: CallPlan, cost: number, size: number, ttlMs: number, sentAt: number): Promise<Made> {
    const window = plan.windows[0] as Window
    const { key, limit } = window
    const request: LeaseRequest = {
      key,
      limit,
      windowMs: deps.leaseWindowMs,
      want: size,
      min: cost,
      waitFor: size,
      ttlMs,
    }
    const lease = store.lease as NonNullable<Store['lease']>
    const result = await caller.ask(key, (deadline) => lease(request, deadline))
    const { granted } = result.lease
    if (granted === 0) return { decision: decisionOf(result, window) }
    tier?.addLease(plan.id, key, result, ttlMs, sentAt, cost, limit)
    const decision = decisionOf({ ...result, remaining: result.remaining + granted - cost }, window)
    return { decision, receipt: leaseReceipt(plan.id, key, result.lease, cost) }
  }

  /**
   * A call the local tier may answer (a cached denial, a lease's units), or that waits for this key's lease call in
   * flight; else the store decides, by a lease call when the tier plans one.
   */
  async function decideThroughTier(plan: CallPlan, cost: number): Promise<Decision> {
    const local = tier as LocalTier
    const { id, tag } = plan
    local.observe(id, cost)
    for (;;) {
      const hit = local.tryLocal(id, cost, tag)
      if (hit) return count(hit.decision, hit.lease && leaseReceipt(id, hit.lease.storeKey, hit.lease.lease, cost))
      const pending = leasing.size === 0 ? undefined : leasing.get(id)
      if (!pending) break
      await pending.catch(() => {})
    }
    const lease = store.lease ? local.leasePlan(id, cost, plan.windows[0]?.limit as number) : undefined
    const sentAt = local.now()
    let made: Made | undefined
    let results: WindowResult[] = []
    try {
      if (lease) {
        const call = leaseFor(plan, cost, lease.size, lease.ttlMs, sentAt)
        leasing.set(id, call)
        made = await call.finally(() => leasing.delete(id))
      } else results = await ask(plan, cost, undefined, sentAt)
    } catch (error) {
      return degrade(plan, cost, error)
    }
    if (made !== undefined) return answer(plan, cost, undefined, made.decision, made.receipt, sentAt, false)
    return answerResults(plan, cost, undefined, results, sentAt, false)
  }

  return {
    decide(plan, cost, costs) {
      // A cost per window is the store's to decide: the local tier keeps answers for one cost.
      if (tier !== undefined && costs === undefined) {
        if (decideNow === undefined) return decideThroughTier(plan, cost)
        const denied = tier.tryDenial(plan.id, cost, plan.tag, plan)
        if (denied) return answerDenied(count(denied))
      }
      const sentAt = tier?.now()
      let results: WindowResult[] | Promise<WindowResult[]>
      try {
        results = ask(plan, cost, costs, sentAt)
        if (Array.isArray(results)) {
          return Promise.resolve(answerResults(plan, cost, costs, results, sentAt ?? 0, true))
        }
      } catch (error) {
        return degrade(plan, cost, error)
      }
      return results.then(
        (answered) => answerResults(plan, cost, costs, answered, sentAt ?? 0, false),
        (error: unknown) => degrade(plan, cost, error),
      )
    },

    async decideInTransit(plan, cost, transitMs) {
      const window = plan.windows[0] as Window
      const { key, limit } = window
      const request = {
        key,
        limit,
        windowMs: deps.leaseWindowMs,
        want: cost,
        min: cost,
        waitFor: cost,
        ttlMs: transitMs,
      }
      const lease = store.lease as NonNullable<Store['lease']>
      let result: Awaited<ReturnType<typeof lease>>
      try {
        result = await caller.ask(key, (deadline) => lease(request, deadline))
      } catch (error) {
        return degrade(plan, cost, error)
      }
      const decision = decisionOf(result, window)
      if (result.lease.granted === 0) return count(decision)
      return count(decision, leaseReceipt(key, key, result.lease, cost))
    },
  }
}
