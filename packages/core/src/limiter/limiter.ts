import { parseDuration } from '../common/duration.js'
import { createEmitter } from '../common/emitter.js'
import { OptionError } from '../common/errors.js'
import { serversOf } from '../store/server-set.js'
import { createAcquireQueue } from './acquire-queue.js'
import { createAfterCall, type Receipt } from './after-call.js'
import { type CallPlan, createCallPlans } from './call-plans.js'
import { createDecide } from './decide.js'
import type { Decision } from './decision.js'
import { createDegradedMode, type Window } from './degraded.js'
import { createEstimatedCalls } from './estimated-calls.js'
import { createKeyWaits } from './key-waits.js'
import type { KeyInput } from './keys.js'
import { createLearning } from './learned-limits.js'
import { resolveLimiterOptions } from './limiter-options.js'
import { withStore } from './limiter-stores.js'
import type { AcquireOptions, LimiterEvents, RateLimiter, RateLimiterOptions } from './limiter-types.js'
import { createLocalTier, noLocalCounts } from './local-tier.js'
import { createPeeks } from './peeks.js'
import { MAX_HOLD_MS, type Policy } from './policy.js'
import { createClassHolds } from './priorities.js'
import { Receipted } from './receipts.js'
import { createRefunds } from './refunds.js'
import { createStoreCaller } from './store-caller.js'

/** The tenant ready() peeks at: a peek records nothing, so any key would do. */
const READY_PROBE_TENANT = 'fleetlimit-ready-probe'

const CONSUME_OPTIONS = ['cost', 'limit', 'anchor', 'priority']
const ACQUIRE_OPTIONS = ['cost', 'limit', 'anchor', 'priority', 'maxWaitMs', 'signal', 'transitMs']

/**
 * Builds a limiter for one policy, or several decided together, on one store; every option is validated here,
 * once. This is the wiring: a call's plan (call-plans.ts) goes through the decision pipeline (decide.ts); what
 * follows an admission is in refunds.ts and after-call.ts.
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
  const { policies, store, failClosed } = config
  const [first] = policies
  const servers = serversOf(store)
  const openingsAtStart = servers?.openings ?? 0
  const events = createLimiterEvents(servers)
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
  const leasable = isLeasable(policies)
  // Only a store with leases counts a unit longer than its window (acquire's transitMs).
  const canTransit = leasable && !!store.lease
  const slotPolicies = policies.filter((p) => p.concurrency !== undefined)
  /** What `decision.extend()` keeps slots for by default: the longest slot life of the policies. */
  const slotTtlMs = Math.max(0, ...slotPolicies.map((p) => p.window))
  const { local } = config
  const tier = local && createLocalTier(leasable ? local : { ...local, lease: false }, first, store)
  const plans = createCallPlans(policies, config.defaultCost, config.checkCost)

  // An admitted decision carries its receipt, and this limiter as its owner, in private fields added to the plain
  // object (see Receipted): a refund through another limiter finds none.
  const owner = {}
  const receiptOf = (decision: unknown) => Receipted.of<Receipt>(decision, owner)
  const estimated = createEstimatedCalls({ config, plans, owner, receiptOf })
  // A memory store decides at once: a call that no lease can serve is decided without a promise in between.
  const leases = tier !== undefined && leasable && local?.lease !== false
  const pipeline = createDecide({
    store,
    caller,
    tier,
    degraded,
    failClosed,
    counters,
    events,
    owner,
    leaseWindowMs: first.window,
    slots: slotPolicies.length > 0,
    direct: !leases && slotPolicies.length === 0,
    // A decision that holds slots gets `extend(ms)`, not enumerable: a spread or JSON of it does not carry it.
    holdSlots(decision) {
      const extend = (ms?: number | string) => afterCall.extend(decision, ms, slotTtlMs)
      Object.defineProperty(decision, 'extend', { value: extend, configurable: true })
    },
  })
  const refunds = createRefunds({
    store,
    caller,
    tier,
    counters,
    receiptOf,
    idOf: (receipt) => afterCall.idOf(receipt),
    settling: (receipt) => afterCall.settling(receipt),
  })
  // An admission whose waiter gave up is refunded and its slots released; a failure is logged once an outage
  // (StoreCaller.failure).
  const refundUnused = (decision: Decision) => {
    void refunds.refund(decision).catch(() => {})
    void afterCall.release(decision).catch(() => {})
  }

  const acquireQueue = createAcquireQueue(
    (target: { plan: CallPlan; transitMs: number }, cost: number, costs: readonly number[] | undefined) =>
      target.transitMs > 0
        ? pipeline.decideInTransit(target.plan, cost, target.transitMs)
        : pipeline.decide(target.plan, cost, costs),
    {
      maxQueue: config.maxQueue,
      refund: refundUnused,
      onStart: (queueKey: string, { plan }: { plan: CallPlan }) => keyWaits.add(queueKey, plan.windows),
      onIdle: (queueKey: string) => keyWaits.forget(queueKey),
      // Only a limiter with in-flight policies has slots, whose release may come before their wait ends.
      ...(slotPolicies.length > 0 && { firmWait: rateWait }),
      ...(policies.some((p) => p.priorities) && { onDenied: createClassHolds(store, (w, send) => askStore(w, send)) }),
    },
  )
  /** A denial's wait that no release shortens: its longest among the rate policies that denied it. */
  function rateWait(decision: Decision): number {
    let wait = 0
    for (const d of decision.policies ?? [decision]) {
      const policy = policies.find((p) => p.name === d.policy)
      if (!d.allowed && policy?.concurrency === undefined) wait = Math.max(wait, d.retryAfterMs)
    }
    return wait
  }

  // Queues of this process by the keys they wait on: a slot freed on one, or units a settle gave back (here or in
  // any process), wake them, so that the room is taken within a round trip, with no polling.
  const keyWaits = createKeyWaits(acquireQueue.wake, store, slotPolicies.length > 0)

  const afterCall = createAfterCall({
    store,
    ask: (key, send) => caller.ask(key, send),
    failure: (error, key) => caller.failure(error, key),
    receiptOf,
    refunded: refunds.refunded,
    freed: keyWaits.freed,
    given: keyWaits.given,
  })

  /** Asks the store something other than a decision, bounded like one; a failure rejects with its StoreError. */
  const askStore = <T>(windows: readonly Window[], send: () => Promise<T>): Promise<T> => {
    const key = (windows[0] as Window).key
    return caller.ask(key, send).catch((error: unknown) => {
      throw caller.failure(error, key)
    })
  }
  const idOf = (windows: readonly Window[]) => windows.map((w) => w.key).join(' ')
  // What limitedFetch learns of an upstream's quota, kept in the store beside the key's window.
  const learning = createLearning(policies, {
    store,
    bounded: (key, send) => askStore([{ key } as Window], send),
    changed: (key, learned, policy) => events.emit('learned', key, learned, policy),
    // The cached plan's key: learned limits are read twice per limitedFetch attempt, with no key built each time.
    windowKeyOf: (key, i) => (plans.planOf(key, undefined, []).windows[i] as Window).key,
  })
  const peeks = createPeeks({ store, plans, askStore, learned: learning.peekLearned, policies })

  return withStore(store, {
    policy: first,
    policies,
    get breakerState() {
      return servers?.state
    },
    consume(key, options) {
      // Not an async function around decide(): that would add a promise and its ticks to every decision.
      let plan: CallPlan
      try {
        plan = estimated.planOf(key, options, CONSUME_OPTIONS)
      } catch (error) {
        return Promise.reject(error)
      }
      return estimated.stamp(options, pipeline.decide(plan, plan.cost, plan.costs), plan)
    },
    async acquire(key, options) {
      const plan = estimated.planOf(key, options, ACQUIRE_OPTIONS)
      const { queueKey, maxWaitMs, signal, transitMs } = acquireOptions(plan, options, first.window, canTransit)
      const admitted = acquireQueue.acquire(queueKey, { plan, transitMs }, plan.cost, maxWaitMs, signal, plan.costs)
      return estimated.stamp(options, admitted, plan)
    },
    peek: peeks.peek,
    learned: learning.learned,
    learn: learning.learn,
    async reset(key) {
      const windows = plans.windowsOf(key, undefined)
      tier?.forget(idOf(windows))
      await Promise.all(windows.map(({ key }) => degraded.reset(key)))
      // Bounded like every store call: during an outage it rejects at once (or at its deadline), never waits.
      await askStore(windows, () => Promise.all(plans.storeKeysOf(key).map((k) => store.reset(k))))
      keyWaits.freed(windows.map((w) => w.key))
    },
    refund: refunds.refund,
    release: (decision) => afterCall.release(decision),
    settle: (decision, options) => estimated.settle(decision, options, afterCall.settle),
    async pause(key, ms) {
      const duration = parseDuration(ms, 'pause(key, ms)', { max: MAX_HOLD_MS })
      const windows = plans.windowsOf(key, undefined)
      // This process's cached denials and leases on the key end now; the store holds the key for every process.
      tier?.forget(idOf(windows))
      const holds = holdsOf(key, windows)
      await askStore(windows, () => store.hold(holds, duration))
    },
    async ready() {
      if (!servers) return true
      if (store.isConnected?.() === false) return false
      if (servers.state === 'closed') return true
      return peeks.peekOf(plans.windowsOf(READY_PROBE_TENANT, undefined)).then(
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

/** Leases reserve units of one sliding log with no block: not slots, buckets or a calendar period's count. */
function isLeasable(policies: readonly Policy[]): boolean {
  const [only] = policies
  return (
    policies.length === 1 &&
    only?.algorithm === 'sliding-log' &&
    only.blockFor === 0 &&
    !only.concurrency &&
    only.priorities === undefined &&
    only.period === undefined
  )
}

/** What acquire() waits under: its queue (one per key and limits), its longest wait, signal and transit margin. */
function acquireOptions(plan: CallPlan, options: AcquireOptions | undefined, windowMs: number, canTransit: boolean) {
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
  const id = options?.limit === undefined ? plan.id : `${plan.id}#${plan.tag}`
  const transitMs =
    options?.transitMs === undefined ? 0 : parseDuration(options.transitMs, 'transitMs', { max: windowMs })
  if (transitMs > 0 && !canTransit) {
    throw new OptionError(
      'transitMs',
      options?.transitMs,
      'a limiter of one sliding-log policy without blockFor (give a longer window as the margin instead)',
    )
  }
  return { queueKey: transitMs > 0 ? `${id}#transit` : id, maxWaitMs, signal, transitMs }
}

/**
 * The limiter's events. Breaker events are forwarded only while someone listens: the store's server set, shared
 * by every limiter on the store, holds a limiter through its forwarding listener, so that listener goes with the
 * last one.
 */
function createLimiterEvents(servers: ReturnType<typeof serversOf>) {
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
  return events
}

/** What a pause holds: the rate windows of the key (slots are not held: its rate windows deny its calls). */
function holdsOf(key: KeyInput, windows: readonly Window[]) {
  const holds = windows
    .filter(({ policy }) => policy.concurrency === undefined)
    .map(({ key, policy }) => ({
      key,
      windowMs: policy.window,
      ...(policy.buckets !== undefined && { buckets: policy.buckets }),
      ...(policy.period !== undefined && { period: true }),
    }))
  if (holds.length === 0) {
    throw new OptionError('pause(key, ms)', key, 'a limiter with a rate policy: in-flight slots are not paused')
  }
  return holds
}
