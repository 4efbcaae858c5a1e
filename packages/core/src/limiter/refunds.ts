// limiter.refund(): exactly the units an admission recorded (and what a settle of it moved), once per receipt.
import type { RefundRequest, Store } from '../store/store.js'
import { type Asked, askOnce, type Receipt, unitsOf } from './after-call.js'
import type { Decision } from './decision.js'
import type { RefundResult } from './limiter-types.js'
import type { LocalTier } from './local-tier.js'
import type { StoreCaller } from './store-caller.js'

const ALREADY_REFUNDED: RefundResult = Object.freeze({ units: 0, outcome: 'already-refunded' })

export interface RefundDeps {
  readonly store: Store
  readonly caller: StoreCaller
  readonly tier: LocalTier | undefined
  readonly counters: { refundedUnits: number }
  receiptOf(decision: unknown): Receipt | undefined
  /** The id a receipt's refund is sent under (its settle's: the store keeps one marker per admission). */
  idOf(receipt: Receipt): string
  /** Waits for a settle of the receipt in flight, so that a refund sees its outcome. */
  settling(receipt: Receipt): Promise<unknown> | undefined
}

export interface Refunds {
  refund(decision: Decision): Promise<RefundResult>
  /** Whether a receipt was refunded (its units are gone); waits for a refund in flight. */
  refunded(receipt: Receipt): Promise<boolean>
}

export function createRefunds(deps: RefundDeps): Refunds {
  const { store, caller, counters } = deps
  // Refunds asked, by receipt (whatever object carries it): the id every try sends, so that the store applies the
  // refund once however often it is sent (a retry after a timeout), the try in flight, and the answer once known.
  const asked = new WeakMap<Receipt, Asked<RefundResult> & { readonly id: string }>()

  /**
   * Sends a receipt's refund under its id; a failure says whether its units stayed (see StoreCaller.failure). It
   * names the units the admission recorded: the store adds what a settle of it moved, answered or not.
   */
  async function send(receipt: Receipt, id: string): Promise<RefundResult> {
    deps.tier?.forgetDenial(receipt.id)
    await deps.settling(receipt)
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

  return {
    async refund(decision) {
      const receipt = deps.receiptOf(decision)
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
        state = { id: deps.idOf(receipt) }
        asked.set(receipt, state)
      }
      return askOnce(state, send(receipt, state.id))
    },
    async refunded(receipt) {
      const state = asked.get(receipt)
      await state?.pending?.catch(() => {})
      return state?.answer?.outcome === 'refunded'
    },
  }
}
