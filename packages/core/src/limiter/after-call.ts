import { randomUUID } from 'node:crypto'
import { parseDuration } from '../common/duration.js'
import { OptionError } from '../common/errors.js'
import { checkInteger, checkOptionNames, isPlainObject } from '../common/validate.js'
import type { Deadline } from '../store/guarded-call.js'
import { keysGivenBack, type RefundRequest, type SlotRequest, type Store, type StoreSettle } from '../store/store.js'
import type { Decision } from './decision.js'
import { MAX_LIMIT } from './policy.js'

/**
 * What an admission recorded: `units` in each rate window of `requests` (or `costs[i]` in the i-th, when they
 * differ), and the slots it took. `names` and `limits` (the policy and the call's limit of each request) are set
 * for receipts that may be settled.
 */
export interface Receipt {
  readonly id: string
  readonly requests: readonly RefundRequest[]
  readonly units: number
  readonly costs?: readonly number[]
  readonly names?: readonly string[]
  readonly limits?: readonly number[]
  readonly slots?: readonly SlotRequest[]
}

/** What release() did: `slots` given back, or why none were. */
export interface ReleaseResult {
  readonly slots: number
  /**
   * 'released'; 'already-released'; 'expired' (its slots had run out, or were freed by a reset); 'denied';
   * 'not-releasable' (it holds no slot: no in-flight policy, failing open, or made by another limiter).
   */
  readonly outcome: 'released' | 'already-released' | 'expired' | 'denied' | 'not-releasable'
}

/** What settle() did. */
export interface SettleResult {
  /**
   * 'settled'; 'already-settled' (settled before to the same cost: nothing more changed); 'expired' (its units
   * have left every window); 'too-deep' (see RefundResult); 'denied'; 'refunded' (refunded before: nothing to
   * settle); 'not-settleable' (no units recorded by this limiter's store, or kept by the bucketed algorithm).
   */
  readonly outcome: 'settled' | 'already-settled' | 'expired' | 'too-deep' | 'denied' | 'refunded' | 'not-settleable'
  /** The most units any window holds over its limit after the settle (0 when every window is within it). */
  readonly overLimit: number
  /** The policy whose window is most over its limit (when `overLimit` > 0). */
  readonly overPolicy?: string
}

export interface SettleOptions {
  /** The call's true cost: a whole number, or a map from policy name to cost (a policy left out keeps its units). */
  cost: number | Readonly<Record<string, number>>
}

/** How the limiter asks its store, bounded by its deadline (StoreCaller.ask), and turns a failure into its error. */
export interface AfterCallDeps {
  readonly store: Store
  ask<R>(key: string, send: (deadline: Deadline) => Promise<R>): Promise<R>
  failure(error: unknown, key: string): unknown
  receiptOf(decision: unknown): Receipt | undefined
  /** Whether a receipt was refunded (its units are gone), and waits for a refund in flight. */
  refunded(receipt: Receipt): Promise<boolean>
  /** Slots were freed on these keys by this process. */
  freed(keys: readonly string[]): void
  /** Units were given back on these keys by this process (a settle below the admitted cost). */
  given(keys: readonly string[]): void
}

interface Settled extends Asked<SettleResult> {
  readonly costs: readonly number[]
}

const NOT_RELEASABLE: ReleaseResult = Object.freeze({ slots: 0, outcome: 'not-releasable' })
const ALREADY_RELEASED: ReleaseResult = Object.freeze({ slots: 0, outcome: 'already-released' })
const none = (outcome: SettleResult['outcome']): SettleResult => ({ outcome, overLimit: 0 })

/** One kind of request about one receipt: the try in flight, and the answer once it came. */
export interface Asked<T> {
  pending?: Promise<T> | undefined
  answer?: T
}

/** Makes `sent` the try in flight of `state`, and keeps its answer: concurrent askers wait for that one try. */
export async function askOnce<T>(state: Asked<T>, sent: Promise<T>): Promise<T> {
  state.pending = sent
  try {
    state.answer = await sent
    return state.answer
  } finally {
    state.pending = undefined
  }
}

/** The units a receipt's admission recorded in its i-th window. */
export function unitsOf(receipt: Receipt, i: number): number {
  return receipt.costs?.[i] ?? receipt.units
}

/**
 * release(), settle() and extend() for a limiter's admitted decisions: each once per receipt, however often and
 * however concurrently it is asked, and safe to send again after a timeout (a slot is freed once; a settle carries
 * an id its store applies once).
 */
export function createAfterCall(deps: AfterCallDeps) {
  const { store } = deps
  const released = new WeakMap<Receipt, Asked<ReleaseResult>>()
  const settled = new WeakMap<Receipt, Settled>()
  // The id a receipt's settle and refund are sent under: the store keeps one marker per admission, which says what
  // a settle moved (a refund takes that back too) and whether it was refunded (a settle then changes nothing).
  const ids = new WeakMap<Receipt, string>()
  const idOf = (receipt: Receipt): string => {
    let id = ids.get(receipt)
    if (id === undefined) {
      id = randomUUID()
      ids.set(receipt, id)
    }
    return id
  }

  async function release(decision: Decision): Promise<ReleaseResult> {
    const receipt = deps.receiptOf(decision)
    if (!receipt?.slots || !store.free)
      return decision?.allowed === false ? { slots: 0, outcome: 'denied' } : NOT_RELEASABLE
    let state = released.get(receipt)
    // Of concurrent releases one is sent; the others, and any later one, learn how it ended.
    if (state?.pending) await state.pending
    if (state?.answer) return state.answer.outcome === 'released' ? ALREADY_RELEASED : state.answer
    if (!state) {
      state = {}
      released.set(receipt, state)
    }
    const { slots } = receipt
    const key = (slots[0] as SlotRequest).key
    const free = store.free.bind(store)
    const sent = deps
      .ask(key, () => free(slots))
      .then(
        (count): ReleaseResult => {
          if (count > 0) deps.freed(slots.map((s) => s.key))
          return count > 0 ? { slots: count, outcome: 'released' } : { slots: 0, outcome: 'expired' }
        },
        (error: unknown) => {
          throw deps.failure(error, key)
        },
      )
    return askOnce(state, sent)
  }

  /** Keeps a decision's slots held `ms` (default: each policy's slotTtlMs) from now; false once they are gone. */
  async function extend(decision: Decision, ms: number | string | undefined, defaultMs: number): Promise<boolean> {
    const duration = ms === undefined ? defaultMs : parseDuration(ms, 'extend(ms)', { min: 1, max: 2_147_483_647 })
    const receipt = deps.receiptOf(decision)
    if (!receipt?.slots || !store.extend) return false
    if (released.get(receipt)) return false
    const { slots } = receipt
    const key = (slots[0] as SlotRequest).key
    const extendSlots = store.extend.bind(store)
    const held = await deps
      .ask(key, () => extendSlots(slots, duration))
      .catch((error: unknown) => {
        throw deps.failure(error, key)
      })
    return held === slots.length
  }

  /** The cost each window of the receipt is to hold, from a settle's `cost`. */
  function costsOf(receipt: Receipt, cost: unknown): number[] {
    const names = receipt.names ?? []
    if (typeof cost === 'number') {
      const units = checkInteger(cost, 'settle cost', 0, MAX_LIMIT)
      return receipt.requests.map(() => units)
    }
    if (!isPlainObject(cost)) {
      throw new OptionError(
        'settle cost',
        cost,
        `a whole number from 0 to ${MAX_LIMIT}, or a map from policy name to one`,
      )
    }
    checkOptionNames(cost, 'settle cost', names)
    const byName = cost as Record<string, unknown>
    return receipt.requests.map((_, i) => {
      const name = names[i] as string
      const given = Object.hasOwn(byName, name) ? byName[name] : undefined
      return given === undefined ? unitsOf(receipt, i) : checkInteger(given, `settle cost.${name}`, 0, MAX_LIMIT)
    })
  }

  async function settle(decision: Decision, options: SettleOptions): Promise<SettleResult> {
    if (!isPlainObject(options)) throw new OptionError('settle options', options, 'an object { cost }')
    checkOptionNames(options, 'settle options', ['cost'])
    const receipt = deps.receiptOf(decision)
    if (!receipt) {
      // Checked all the same: a wrong cost is a mistake whatever the decision.
      if (typeof options.cost === 'number') checkInteger(options.cost, 'settle cost', 0, MAX_LIMIT)
      return none(decision?.allowed === false ? 'denied' : 'not-settleable')
    }
    const costs = costsOf(receipt, options.cost)
    if (!store.settle || receipt.requests.length === 0 || receipt.requests.some((r) => r.buckets !== undefined)) {
      return none('not-settleable')
    }
    let state = settled.get(receipt)
    if (state?.costs.some((c, i) => c !== costs[i])) {
      throw new OptionError(
        'settle cost',
        options.cost,
        `the cost it was settled to (${state.costs.join(', ')}): a decision is settled once`,
      )
    }
    if (state?.pending) await state.pending.catch(() => {})
    if (state?.answer)
      return state.answer.outcome === 'settled' ? { ...state.answer, outcome: 'already-settled' } : state.answer
    if (!state) {
      state = { costs }
      settled.set(receipt, state)
    }
    const requests = receipt.requests.map((r, i) => ({
      key: r.key,
      windowMs: r.windowMs,
      recorded: r.recorded,
      delta: (costs[i] as number) - unitsOf(receipt, i),
      ...(r.period && { period: true }),
    }))
    const key = (requests[0] as RefundRequest).key
    const send = store.settle.bind(store)
    const id = idOf(receipt)
    const sent = deps.refunded(receipt).then((refunded) =>
      refunded
        ? none('refunded')
        : deps
            .ask(key, (deadline) => send(requests, id, deadline))
            .then(
              (result) => {
                // This process's waiters on those windows would otherwise sleep out the wait they were told.
                const given = keysGivenBack(requests, result)
                if (given.length > 0) deps.given(given)
                return resultOf(receipt, result)
              },
              (error: unknown) => {
                throw deps.failure(error, key)
              },
            ),
    )
    return askOnce(state, sent)
  }

  /** A store's answer in the limiter's terms: how far over its limit the settle left each window. */
  function resultOf(receipt: Receipt, { outcome, used }: StoreSettle): SettleResult {
    let overLimit = 0
    let overPolicy: string | undefined
    used.forEach((units, i) => {
      const over = units - (receipt.limits?.[i] ?? Number.POSITIVE_INFINITY)
      if (over > overLimit) {
        overLimit = over
        overPolicy = receipt.names?.[i]
      }
    })
    return overPolicy === undefined ? { outcome, overLimit } : { outcome, overLimit, overPolicy }
  }

  return {
    release,
    extend,
    settle,
    /** The id a receipt's refund is sent under: its settle's. */
    idOf,
    /** Waits for a settle of the receipt in flight, so that a refund sees its outcome. */
    settling: (receipt: Receipt) => settled.get(receipt)?.pending?.catch(() => {}),
  }
}
