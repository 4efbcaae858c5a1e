import { parseDuration } from '../common/duration.js'
import { createEmitter } from '../common/emitter.js'
import { OptionError } from '../common/errors.js'
import { checkInteger, checkOptionNames, isPlainObject } from '../common/validate.js'
import { type ConsumeNow, consumeNowOf, type EntrySlot } from '../store/memory-store.js'
import { serversOf } from '../store/server-set.js'
import type { Lease, RefundRequest, SlotRequest, Store, WindowRequest, WindowResult } from '../store/store.js'
import { createAcquireQueue } from './acquire-queue.js'
import { type Asked, askOnce, createAfterCall, type Receipt, unitsOf } from './after-call.js'
import { combine, type Decision, enforce, toDecision } from './decision.js'
import { createDegradedMode, type Window } from './degraded.js'
import { type KeyInput, windowKey } from './keys.js'
import { resolveLimiterOptions } from './limiter-options.js'
import { withStore } from './limiter-stores.js'
import type { ConsumeOptions, LimiterEvents, RateLimiter, RateLimiterOptions, RefundResult } from './limiter-types.js'
import { createLocalTier, noLocalCounts } from './local-tier.js'
import { checkCost, MAX_HOLD_MS, MAX_LIMIT, policyKeyName } from './policy.js'
import { createStoreCaller } from './store-caller.js'

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

const ALREADY_REFUNDED: RefundResult = Object.freeze({ units: 0, outcome: 'already-refunded' })

/** Returns the object it is given: a subclass's private fields are then added to that object, whatever made it. */
class Stamp {
  constructor(target: object) {
    // biome-ignore lint/correctness/noConstructorReturn: the point of the class (see Receipted)
    return target
  }
}

/**
 * A decision's receipt (what a refund removes) in private fields added to the plain decision object (see Stamp):
 * no key, spread, JSON or deep equality sees it, and an object made with the decision as its prototype is not that
 * decision. A WeakMap entry per decision, or a hidden property defined on it, cost the hot path more than the rest
 * of the limiter; one class for every limiter keeps their decisions of one shape.
 */
class Receipted extends Stamp {
  readonly #receipt: unknown
  readonly #owner: object
  constructor(decision: Decision, receipt: unknown, owner: object) {
    super(decision)
    this.#receipt = receipt
    this.#owner = owner
  }
  static has(value: object): boolean {
    return #receipt in value
  }
  /** The receipt `owner` put on `value`, if any. */
  static of<R>(value: unknown, owner: object): R | undefined {
    if (typeof value !== 'object' || value === null || !(#receipt in value)) return undefined
    const receipted = value as Receipted
    return receipted.#owner === owner ? (receipted.#receipt as R) : undefined
  }
}

/** Where a refund of units recorded at `recorded` in a window takes them from. */
function refundRequestOf({ key, policy }: Window, recorded: number): RefundRequest {
  const request: Mutable<RefundRequest> = { key, windowMs: policy.window, recorded }
  if (policy.buckets !== undefined) request.buckets = policy.buckets
  return request
}

/** The receipt of an admission in one window: one object per admission, its request built when a refund asks. */
class WindowReceipt implements Receipt {
  constructor(
    readonly id: string,
    readonly units: number,
    private readonly window: Window,
    private readonly recorded: number,
  ) {}
  get requests(): readonly RefundRequest[] {
    return [refundRequestOf(this.window, this.recorded)]
  }
  get names(): readonly string[] {
    return [this.window.policy.name]
  }
  get limits(): readonly number[] {
    return [this.window.limit]
  }
}

/** The tenant ready() peeks at: a peek records nothing, so any key would do. */
const READY_PROBE_TENANT = 'fleetlimit-ready-probe'

/** Tenants whose default call a limiter keeps built: about 200 bytes each. */
const CACHED_CALLS = 16_384

/**
 * What a call is decided on: its windows (one per policy) and its cost; a call kept for a tenant also keeps its
 * store requests once built, and (as an EntrySlot) the memory store's entry of its key.
 */
interface Call extends EntrySlot {
  readonly windows: readonly Window[]
  /** The call's cost; with `costs`, the largest of them. */
  readonly cost: number
  /** The cost in each window, when they differ (a cost map); an in-flight window's is 1, its one slot. */
  readonly costs: readonly number[] | undefined
  requests: WindowRequest[] | undefined
}

const newCall = (windows: readonly Window[], cost: number, costs?: readonly number[]): Call => ({
  windows,
  cost,
  costs,
  requests: undefined,
  entry: undefined,
})

const CONSUME_OPTIONS = ['cost', 'limit']
const ACQUIRE_OPTIONS = ['cost', 'limit', 'maxWaitMs', 'signal', 'transitMs']

/**
 * Builds a limiter for one policy, or several decided together, on one store; every option is validated here,
 * once.
 *
 * @example
 * ```ts
 * const limiter = createRateLimiter({ store: redisStore(new Redis()), limit: 100, window: '1m', name: 'api' })
 * const decision = await limiter.consume({ tenant: 'acme', route: 'GET /search' })
 * if (!decision.allowed) console.log(`retry in ${decision.retryAfterMs} ms`)
 * ```
 */
export function createRateLimiter(options: RateLimiterOptions): RateLimiter {
  const config = resolveLimiterOptions(options)
  const { policies, store, failClosed, defaultCost } = config
  const [first] = policies
  const servers = serversOf(store)
  const openingsAtStart = servers?.openings ?? 0
  // Breaker events are forwarded only while someone listens: the store's server set, shared by every limiter
  // on the store, holds a limiter through its forwarding listener, so that listener goes with the last one.
  const forwarding = new Map<keyof LimiterEvents, () => void>()
  const events = createEmitter<LimiterEvents>(
    (event) => {
      if (!servers || (event !== 'breakerOpen' && event !== 'breakerClose')) return
      const forward = () => events.emit(event)
      forwarding.set(event, servers.on(event === 'breakerOpen' ? 'open' : 'close', forward))
    },
    (event) => {
      forwarding.get(event)?.()
      forwarding.delete(event)
    },
  )
  const mode = failClosed
    ? 'failing closed'
    : policies.some((p) => p.fallback)
      ? 'failing open under its fallback limit'
      : 'failing open, unlimited'
  const caller = createStoreCaller(store, {
    policyName: first.name,
    mode,
    timeoutMs: config.timeoutMs,
    logger: config.logger,
    events,
  })
  const degraded = createDegradedMode(policies)
  const counters = { decisions: 0, allowed: 0, denied: 0, shadowDenied: 0, refundedUnits: 0, degraded: 0 }
  // Leases reserve units of one sliding log; other calls only use the deny cache. A policy with a block denies
  // through the store, which starts the block.
  const leasable =
    policies.length === 1 && first.algorithm === 'sliding-log' && first.blockFor === 0 && !first.concurrency
  const slotPolicies = policies.filter((p) => p.concurrency !== undefined)
  /** What `decision.extend()` keeps slots for by default: the longest slot life of the policies. */
  const slotTtlMs = Math.max(0, ...slotPolicies.map((p) => p.window))
  const { local } = config
  const tier = local && createLocalTier(leasable ? local : { ...local, lease: false }, first, store)

  const keyNames = policies.map(policyKeyName)
  const policyNames = policies.map((p) => p.name)
  /** The windows a key input counts in: one per policy, with its store key and this call's limit. */
  const windowsOf = (input: KeyInput, limits: readonly number[] | undefined): Window[] =>
    policies.map((policy, i) => {
      const key = windowKey(keyNames[i] as string, policy.scope, input)
      return { policy, key, limit: limits ? (limits[i] as number) : policy.limit }
    })
  const idOf = (windows: readonly Window[]) =>
    windows.length === 1 ? (windows[0] as Window).key : windows.map((w) => w.key).join(' ')
  const keyOf = (windows: readonly Window[]) => (windows[0] as Window).key
  /** What a local answer was made under: a cached denial or a lease serves only calls with the same limits. */
  const limitsTag = (windows: readonly Window[]): number | string =>
    windows.length === 1 ? (windows[0] as Window).limit : windows.map((w) => w.limit).join(',')

  // Plain assignments, not conditional spreads: this runs for every decision.
  const requestsOf = (windows: readonly Window[], cost: number, costs?: readonly number[]): WindowRequest[] =>
    windows.map(({ policy, key, limit }, i) => {
      const request: Mutable<WindowRequest> = {
        key,
        limit,
        windowMs: policy.window,
        cost: costs ? (costs[i] as number) : cost,
      }
      if (policy.buckets !== undefined) request.buckets = policy.buckets
      if (policy.blockFor > 0) request.blockMs = policy.blockFor
      if (policy.shadow) request.shadow = true
      if (policy.concurrency !== undefined) {
        request.slots = true
        request.cost = 1
      }
      return request
    })

  // An admitted decision carries its receipt, and this limiter as its owner, in private fields added to the plain
  // object (see Receipted): a refund through another limiter finds none.
  const owner = {}
  const receiptOf = (decision: unknown) => Receipted.of<Receipt>(decision, owner)
  // Refunds asked, by receipt (whatever object carries it): the id every try sends, so that the store applies the
  // refund once however often it is sent (a retry after a timeout), the try in flight, and the answer once known.
  const asked = new WeakMap<Receipt, Asked<RefundResult> & { readonly id: string }>()
  const leaseReceipt = (id: string, key: string, lease: Lease, units: number): Receipt => ({
    id,
    requests: [{ key, windowMs: lease.windowMs, recorded: lease.recorded }],
    units,
  })

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
      if (receipt.slots) holdSlots(decision)
    }
    events.emit('decision', decision)
    return decision
  }

  /** A decision that holds slots gets `extend(ms)`, not enumerable: a spread or JSON of it does not carry it. */
  function holdSlots(decision: Decision): void {
    const extend = (ms?: number | string) => afterCall.extend(decision, ms, slotTtlMs)
    Object.defineProperty(decision, 'extend', { value: extend, configurable: true })
  }

  async function degrade(windows: readonly Window[], cost: number, error: unknown): Promise<Decision> {
    const failure = caller.failure(error, keyOf(windows))
    if (failClosed) throw failure
    counters.degraded++
    const decision = await degraded.decide(windows, cost)
    events.emit('degraded', decision)
    return count(decision)
  }

  // One lease call per key at a time: calls that arrive meanwhile wait for it and take its units.
  const leasing = new Map<string, Promise<unknown>>()

  async function decide(windows: readonly Window[], cost: number): Promise<Decision> {
    const id = idOf(windows)
    const tag = limitsTag(windows)
    tier?.observe(id, cost)
    for (;;) {
      const hit = tier?.tryLocal(id, cost, tag)
      if (hit) return count(hit.decision, hit.lease && leaseReceipt(id, hit.lease.storeKey, hit.lease.lease, cost))
      const pending = leasing.size === 0 ? undefined : leasing.get(id)
      if (!pending) break
      await pending.catch(() => {})
    }
    const plan = store.lease ? tier?.leasePlan(id, cost, (windows[0] as Window).limit) : undefined
    const sentAt = tier?.now() ?? 0
    let made: Made
    try {
      if (plan) {
        const call = leaseFor(id, windows[0] as Window, cost, plan, sentAt)
        leasing.set(id, call)
        made = await call.finally(() => leasing.delete(id))
      } else made = await consume(id, windows, cost)
    } catch (error) {
      return degrade(windows, cost, error)
    }
    tier?.remember(id, cost, made.decision, sentAt, tag)
    return count(made.decision, made.receipt)
  }

  type Made = { readonly decision: Decision; readonly receipt?: Receipt }

  // A memory store decides at once: a call that no lease can serve is decided without a promise in between.
  const leases = tier !== undefined && leasable && local?.lease !== false
  const consumeNow = leases || slotPolicies.length > 0 ? undefined : consumeNowOf(store)

  /** decide() for a call whose windows take different costs: asked of the store, which the local tier cannot answer. */
  async function decideCosts(windows: readonly Window[], cost: number, costs: readonly number[]): Promise<Decision> {
    let made: Made
    try {
      made = await consume(idOf(windows), windows, cost, costs)
    } catch (error) {
      return degrade(windows, cost, error)
    }
    return count(made.decision, made.receipt)
  }

  /** decide() on a memory store, for a limiter without leases: the same steps, with the store's answer at once. */
  function decideNow(call: Call, now: ConsumeNow): Promise<Decision> {
    const { windows, cost } = call
    const id = idOf(windows)
    const tag = limitsTag(windows)
    // No leases here: nothing to observe for their size, and only a cached denial answers locally.
    const denied = tier?.tryDenial(id, cost, tag)
    if (denied) return Promise.resolve(count(denied))
    const sentAt = tier?.now()
    let decision: Decision
    let receipt: Receipt | undefined
    try {
      if (call.requests === undefined) call.requests = requestsOf(windows, cost)
      const { requests } = call
      // The tier's clock is performance.now(): the store may take its reading as the decision's time.
      if (requests.length === 1) {
        // madeOne's steps, with no object around the decision and its receipt.
        const window = windows[0] as Window
        const result = caller.askNow(now.one, requests[0] as WindowRequest, sentAt, call)
        decision = decisionOf(result, window)
        receipt = result.recorded === undefined ? undefined : new WindowReceipt(id, cost, window, result.recorded)
      } else ({ decision, receipt } = madeOf(id, windows, cost, caller.askNow(now.many, requests, sentAt, undefined)))
    } catch (error) {
      return degrade(windows, cost, error)
    }
    tier?.remember(id, cost, decision, sentAt as number, tag)
    return Promise.resolve(count(decision, receipt, true))
  }

  async function consume(
    id: string,
    windows: readonly Window[],
    cost: number,
    costs?: readonly number[],
  ): Promise<Made> {
    const results = await caller.ask(keyOf(windows), (deadline) =>
      store.consume(requestsOf(windows, cost, costs), deadline),
    )
    return madeOf(id, windows, cost, results, costs)
  }

  /** The decision a store's results make, and what a refund, a settle or a release of it changes. */
  function madeOf(
    id: string,
    windows: readonly Window[],
    cost: number,
    results: readonly WindowResult[],
    costs?: readonly number[],
  ): Made {
    if (results.length === 1 && slotPolicies.length === 0) {
      return madeOne(id, results[0] as WindowResult, windows[0] as Window, cost)
    }
    const decision = combine(results.map((result, i) => decisionOf(result, windows[i] as Window)))
    const requests: RefundRequest[] = []
    const names: string[] = []
    const limits: number[] = []
    const units: number[] = []
    const slots: SlotRequest[] = []
    for (let i = 0; i < results.length; i++) {
      const { recorded } = results[i] as WindowResult
      if (recorded === undefined) continue
      const window = windows[i] as Window
      if (window.policy.concurrency !== undefined) {
        slots.push({ key: window.key, slot: recorded })
        continue
      }
      requests.push(refundRequestOf(window, recorded))
      names.push(window.policy.name)
      limits.push(window.limit)
      units.push(costs ? (costs[i] as number) : cost)
    }
    if (requests.length === 0 && slots.length === 0) return { decision }
    const receipt: Mutable<Receipt> = { id, requests, units: cost, names, limits }
    if (costs) receipt.costs = units
    if (slots.length > 0) receipt.slots = slots
    return { decision, receipt }
  }

  /** consume() for one window: the same decision and receipt, with no array of decisions to combine. */
  function madeOne(id: string, result: WindowResult, window: Window, cost: number): Made {
    const decision = decisionOf(result, window)
    const { recorded } = result
    if (recorded === undefined) return { decision }
    return { decision, receipt: new WindowReceipt(id, cost, window, recorded) }
  }

  const decisionOf = (result: WindowResult, { policy, limit }: Window) => toDecision(result, 'store', policy, limit)

  /** One store call reserves `size` units; this call takes `cost` of them, the local tier keeps the rest. */
  async function leaseFor(
    id: string,
    window: Window,
    cost: number,
    { size, ttlMs }: { size: number; ttlMs: number },
    sentAt: number,
  ): Promise<Made> {
    const { key, limit } = window
    const request = { key, limit, windowMs: first.window, want: size, min: cost, waitFor: size, ttlMs }
    const lease = store.lease as NonNullable<Store['lease']>
    const result = await caller.ask(key, (deadline) => lease(request, deadline))
    const { granted } = result.lease
    if (granted === 0) return { decision: decisionOf(result, window) }
    tier?.addLease(id, key, result, ttlMs, sentAt, cost, limit)
    const decision = decisionOf({ ...result, remaining: result.remaining + granted - cost }, window)
    return { decision, receipt: leaseReceipt(id, key, result.lease, cost) }
  }

  /** A call's limits, one per policy, or undefined for the policies' own. */
  function resolveLimits(value: unknown): readonly number[] | undefined {
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

  // A call with no options: its windows (keys encoded and checked) are built once per tenant, or per route and
  // tenant, and kept for the next calls, up to CACHED_CALLS of each kind; past it, one of the first kept is dropped.
  const cachedCalls = new Map<string, Call>()
  // By route, then tenant: no key string is built to look a call up. `undefined` is the route of `{ tenant }`.
  const cachedRoutes = new Map<string | undefined, Map<string, Call>>()
  let cachedRouteCalls = 0
  function defaultCall(key: KeyInput): Call {
    if (typeof key !== 'string') return routeCall(key)
    let call = cachedCalls.get(key)
    if (call === undefined) {
      call = newCall(windowsOf(key, undefined), defaultCost)
      if (cachedCalls.size >= CACHED_CALLS) cachedCalls.delete(cachedCalls.keys().next().value as string)
      cachedCalls.set(key, call)
    }
    return call
  }
  function routeCall(key: Exclude<KeyInput, string>): Call {
    const tenant: unknown = key?.tenant
    const route: unknown = key?.route
    // Anything else is refused by windowsOf, with the error it names.
    if (typeof tenant !== 'string' || (route !== undefined && typeof route !== 'string')) {
      return newCall(windowsOf(key, undefined), defaultCost)
    }
    let tenants = cachedRoutes.get(route)
    let call = tenants?.get(tenant)
    if (call !== undefined) return call
    call = newCall(windowsOf(key, undefined), defaultCost)
    if (cachedRouteCalls >= CACHED_CALLS) dropOldestRouteCall()
    if (tenants === undefined) {
      tenants = new Map()
      cachedRoutes.set(route, tenants)
    }
    tenants.set(tenant, call)
    cachedRouteCalls++
    return call
  }
  function dropOldestRouteCall() {
    const [route, tenants] = cachedRoutes.entries().next().value as [string | undefined, Map<string, Call>]
    tenants.delete(tenants.keys().next().value as string)
    if (tenants.size === 0) cachedRoutes.delete(route)
    cachedRouteCalls--
  }

  /** A call's windows and cost; the cost must fit in each of its limits. */
  function resolveCall(key: KeyInput, options: ConsumeOptions | undefined, accepted: readonly string[]): Call {
    if (options === undefined) return defaultCall(key)
    checkOptionNames(options, 'options', accepted)
    const limits = resolveLimits(options.limit)
    if (typeof options.cost === 'object' && options.cost !== null && policies.length > 1) {
      const costs = resolveCosts(options.cost, limits)
      return newCall(windowsOf(key, limits), Math.max(...costs), costs)
    }
    const cost = options.cost === undefined ? defaultCost : config.checkCost(options.cost)
    if (limits) checkCost(cost, 'cost', Math.min(...limits.filter((_, i) => !policies[i]?.concurrency)))
    return newCall(windowsOf(key, limits), cost)
  }

  /** A cost map's cost in each window: a policy left out takes its own; an in-flight window takes its one slot. */
  function resolveCosts(value: object, limits: readonly number[] | undefined): number[] {
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

  /**
   * Sends a receipt's refund under its id; a failure says whether its units stayed (see StoreCaller.failure). It
   * names the units the admission recorded: the store adds what a settle of it moved, answered or not.
   */
  async function sendRefund(receipt: Receipt, id: string): Promise<RefundResult> {
    tier?.forgetDenial(receipt.id)
    await afterCall.settling(receipt)
    const { costs } = receipt
    const requests = costs ? receipt.requests.map((r, i) => ({ ...r, units: unitsOf(receipt, i) })) : receipt.requests
    const key = (requests[0] as RefundRequest).key
    const storeRefund = (store.refund as NonNullable<Store['refund']>).bind(store)
    const result = await caller
      .ask(key, (deadline) => storeRefund(requests, receipt.units, id, deadline))
      .catch((error: unknown) => {
        throw caller.failure(error, key, { refundUnits: receipt.units })
      })
    counters.refundedUnits += result.units
    return result
  }

  /** limiter.refund: once per receipt, however often it is asked. */
  async function refund(decision: Decision): Promise<RefundResult> {
    const receipt = receiptOf(decision)
    if (!receipt || receipt.requests.length === 0) {
      return { units: 0, outcome: decision?.allowed === false ? 'denied' : 'not-refundable' }
    }
    if (!store.refund) return { units: 0, outcome: 'not-refundable' }
    let state = asked.get(receipt)
    if (state?.pending) {
      // Of concurrent refunds of one decision one is sent; the others learn how it ended.
      await state.pending
      return { units: 0, outcome: 'already-refunded' }
    }
    if (state?.answer) return state.answer.outcome === 'refunded' ? ALREADY_REFUNDED : state.answer
    if (!state) {
      state = { id: afterCall.idOf(receipt) }
      asked.set(receipt, state)
    }
    return askOnce(state, sendRefund(receipt, state.id))
  }

  // An admission whose waiter gave up is refunded and its slots released; a failure is logged once an outage
  // (StoreCaller.failure).
  const refundUnused = (decision: Decision) => {
    void refund(decision).catch(() => {})
    void afterCall.release(decision).catch(() => {})
  }

  /**
   * An admission whose units count `transitMs` longer: one lease of exactly its cost, recorded at now + transitMs
   * (see Lease), which the local tier never serves from.
   */
  async function decideInTransit(window: Window, cost: number, transitMs: number): Promise<Decision> {
    const { key, limit } = window
    const request = { key, limit, windowMs: first.window, want: cost, min: cost, waitFor: cost, ttlMs: transitMs }
    const lease = store.lease as NonNullable<Store['lease']>
    let result: Awaited<ReturnType<typeof lease>>
    try {
      result = await caller.ask(key, (deadline) => lease(request, deadline))
    } catch (error) {
      return degrade([window], cost, error)
    }
    const decision = decisionOf(result, window)
    if (result.lease.granted === 0) return count(decision)
    return count(decision, leaseReceipt(key, key, result.lease, cost))
  }

  const acquireQueue = createAcquireQueue(
    (target: { windows: readonly Window[]; transitMs: number }, cost: number, costs: readonly number[] | undefined) =>
      target.transitMs > 0
        ? decideInTransit(target.windows[0] as Window, cost, target.transitMs)
        : costs
          ? decideCosts(target.windows, cost, costs)
          : decide(target.windows, cost),
    {
      maxQueue: config.maxQueue,
      refund: refundUnused,
      // Only a limiter with in-flight policies has slot keys to wait on.
      ...(slotPolicies.length > 0 && {
        firmWait: rateWait,
        onStart: (queueKey: string, { windows }: { windows: readonly Window[] }) => slotWaits.add(queueKey, windows),
        onIdle: (queueKey: string) => slotWaits.forget(queueKey),
      }),
    },
  )
  /** A denial's wait that no release shortens: its longest among the rate policies that denied it. */
  function rateWait(decision: Decision): number {
    const each = decision.policies ?? [decision]
    let wait = 0
    for (const d of each) {
      const policy = policies.find((p) => p.name === d.policy)
      if (!d.allowed && policy?.concurrency === undefined) wait = Math.max(wait, d.retryAfterMs)
    }
    return wait
  }

  // Queues of this process that wait on slot keys: a slot freed on one (a release here, or the store's message of
  // one anywhere) wakes them, so that a freed slot is taken within a round trip, with no polling.
  const slotWaits = createSlotWaits(acquireQueue.wake)
  if (slotPolicies.length > 0) {
    store.onSlotFree?.(slotWaits.freed)
    // A reset frees every slot of its key.
    store.onKeyChange?.(slotWaits.freed)
  }

  const afterCall = createAfterCall({
    store,
    ask: (key, send) => caller.ask(key, send),
    failure: (error, key) => caller.failure(error, key),
    receiptOf,
    async refunded(receipt) {
      const state = asked.get(receipt)
      await state?.pending?.catch(() => {})
      return state?.answer?.outcome === 'refunded'
    },
    freed: slotWaits.freed,
  })

  return withStore(store, {
    policy: first,
    policies,
    get breakerState() {
      return servers?.state
    },
    consume(key, options) {
      // Not an async function around decide(): that would add a promise and its ticks to every decision.
      let call: Call
      try {
        call = resolveCall(key, options, CONSUME_OPTIONS)
      } catch (error) {
        return Promise.reject(error)
      }
      if (call.costs) return decideCosts(call.windows, call.cost, call.costs)
      return consumeNow ? decideNow(call, consumeNow) : decide(call.windows, call.cost)
    },
    async acquire(key, options) {
      const { windows, cost, costs } = resolveCall(key, options, ACQUIRE_OPTIONS)
      const maxWait = options?.maxWaitMs
      const maxWaitMs =
        maxWait === undefined || maxWait === Number.POSITIVE_INFINITY
          ? Number.POSITIVE_INFINITY
          : parseDuration(maxWait, 'maxWaitMs', { min: 0, max: 2_147_483_647 })
      const signal = options?.signal
      if (signal !== undefined && !(signal instanceof AbortSignal)) {
        throw new OptionError('signal', signal, 'an AbortSignal')
      }
      // One queue per key and limits: its batches share what the store reported under those limits.
      const id = options?.limit === undefined ? idOf(windows) : `${idOf(windows)}#${limitsTag(windows)}`
      const transitMs =
        options?.transitMs === undefined ? 0 : parseDuration(options.transitMs, 'transitMs', { max: first.window })
      if (transitMs > 0 && !(leasable && store.lease)) {
        throw new OptionError(
          'transitMs',
          options?.transitMs,
          'a limiter of one sliding-log policy without blockFor (give a longer window as the margin instead)',
        )
      }
      const queueKey = transitMs > 0 ? `${id}#transit` : id
      return acquireQueue.acquire(queueKey, { windows, transitMs }, cost, maxWaitMs, signal, costs)
    },
    async peek(key, options) {
      if (options !== undefined) checkOptionNames(options, 'options', ['limit'])
      const windows = windowsOf(key, resolveLimits(options?.limit))
      const results = await caller
        .ask(keyOf(windows), () => store.peek(requestsOf(windows, 1)))
        .catch((error: unknown) => {
          throw caller.failure(error, keyOf(windows))
        })
      return combine(results.map((result, i) => decisionOf(result, windows[i] as Window)))
    },
    async reset(key) {
      const windows = windowsOf(key, undefined)
      tier?.forget(idOf(windows))
      await Promise.all(windows.map(({ key }) => degraded.reset(key)))
      // Bounded like every store call: during an outage it rejects at once (or at its deadline), never waits.
      await caller
        .ask(keyOf(windows), () => Promise.all(windows.map(({ key }) => store.reset(key))))
        .catch((error: unknown) => {
          throw caller.failure(error, keyOf(windows))
        })
      slotWaits.freed(windows.map((w) => w.key))
    },
    refund,
    release: (decision) => afterCall.release(decision),
    settle: (decision, options) => afterCall.settle(decision, options),
    async pause(key, ms) {
      const duration = parseDuration(ms, 'pause(key, ms)', { max: MAX_HOLD_MS })
      const windows = windowsOf(key, undefined)
      // This process's cached denials and leases on the key end now; the store holds the key for every process.
      tier?.forget(idOf(windows))
      // Slots are not held: a paused key's calls are denied by its rate windows.
      const holds = windows
        .filter(({ policy }) => policy.concurrency === undefined)
        .map(({ key, policy }) => ({
          key,
          windowMs: policy.window,
          ...(policy.buckets !== undefined && { buckets: policy.buckets }),
        }))
      if (holds.length === 0) {
        throw new OptionError('pause(key, ms)', key, 'a limiter with a rate policy: in-flight slots are not paused')
      }
      await caller
        .ask(keyOf(windows), () => store.hold(holds, duration))
        .catch((error: unknown) => {
          throw caller.failure(error, keyOf(windows))
        })
    },
    async ready() {
      if (!servers) return true
      if (store.isConnected?.() === false) return false
      if (servers.state === 'closed') return true
      const windows = windowsOf(READY_PROBE_TENANT, undefined)
      return caller
        .ask(keyOf(windows), () => store.peek(requestsOf(windows, 1)))
        .then(
          () => servers.state === 'closed',
          () => false,
        )
    },
    stats: () => ({
      ...counters,
      ...caller.stats(),
      ...(tier ? tier.stats() : noLocalCounts()),
      breakerOpenings: (servers?.openings ?? 0) - openingsAtStart,
    }),
    on: events.on,
  })
}

/** Which acquire queues wait on which slot keys, so that a slot freed on a key wakes exactly those. */
function createSlotWaits(wake: (queueKey: string) => void) {
  const queuesByKey = new Map<string, Set<string>>()
  const keysByQueue = new Map<string, readonly string[]>()
  return {
    /** A queue waits on its windows' slot keys (none for a call without in-flight windows). */
    add(queueKey: string, windows: readonly Window[]): void {
      if (keysByQueue.has(queueKey)) return
      const keys = windows.filter((w) => w.policy.concurrency !== undefined).map((w) => w.key)
      if (keys.length === 0) return
      keysByQueue.set(queueKey, keys)
      for (const key of keys) {
        let queues = queuesByKey.get(key)
        if (!queues) {
          queues = new Set()
          queuesByKey.set(key, queues)
        }
        queues.add(queueKey)
      }
    },
    forget(queueKey: string): void {
      const keys = keysByQueue.get(queueKey)
      if (!keys) return
      keysByQueue.delete(queueKey)
      for (const key of keys) {
        const queues = queuesByKey.get(key)
        queues?.delete(queueKey)
        if (queues?.size === 0) queuesByKey.delete(key)
      }
    },
    /** Slots were freed on `keys`; undefined: on any key (messages may have been missed). */
    freed(keys: readonly string[] | undefined): void {
      if (keys === undefined) {
        for (const queueKey of [...keysByQueue.keys()]) wake(queueKey)
        return
      }
      for (const key of keys) for (const queueKey of [...(queuesByKey.get(key) ?? [])]) wake(queueKey)
    },
  }
}
