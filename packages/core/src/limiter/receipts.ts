// A decision's receipt: what an admission recorded, carried by the decision itself where only its limiter finds it.
import type { Mutable } from '../common/mutable.js'
import type { Lease, RefundRequest } from '../store/store.js'
import type { Receipt } from './after-call.js'
import type { Decision } from './decision.js'
import type { Window } from './degraded.js'

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
export class Receipted extends Stamp {
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
export function refundRequestOf({ key, policy }: Window, recorded: number): RefundRequest {
  const request: Mutable<RefundRequest> = { key, windowMs: policy.window, recorded }
  if (policy.buckets !== undefined) request.buckets = policy.buckets
  if (policy.period !== undefined) request.period = true
  return request
}

/** The receipt of an admission in one window: one object per admission, its request built when a refund asks. */
export class WindowReceipt implements Receipt {
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

/** The receipt of units taken from a lease: a refund returns them to the lease's entry. */
export const leaseReceipt = (id: string, key: string, lease: Lease, units: number): Receipt => ({
  id,
  requests: [{ key, windowMs: lease.windowMs, recorded: lease.recorded }],
  units,
})
