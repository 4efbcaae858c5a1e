// A limiter's peek: the decision one unit would get now, recording nothing, under the limit the fleet learned for
// the key when it learned one.
import { checkOptionNames } from '../common/validate.js'
import type { Store } from '../store/store.js'
import { type CallPlans, windowRequests } from './call-plans.js'
import type { Decision } from './decision.js'
import type { Window } from './degraded.js'
import type { KeyInput } from './keys.js'
import type { LearnedLimit } from './learned-limits.js'
import type { PeekOptions } from './limiter-types.js'
import { decisionOfWindows } from './priorities.js'

export interface PeeksOptions {
  readonly store: Store
  readonly plans: CallPlans
  /** Runs a store call bounded like a decision; a failure rejects with its StoreError. */
  readonly askStore: <T>(windows: readonly Window[], send: () => Promise<T>) => Promise<T>
  readonly learned: (key: KeyInput) => Promise<LearnedLimit | undefined>
  /** The policy's limit (a learned limit applies to a limiter of one policy). */
  readonly limit: number
}

export function createPeeks({ store, plans, askStore, learned, limit }: PeeksOptions) {
  const peekOf = (windows: readonly Window[]): Promise<Decision> =>
    askStore(windows, () => store.peek(windowRequests(windows, 1))).then((results) =>
      decisionOfWindows(results, windows, 1),
    )
  return {
    peekOf,
    async peek(key: KeyInput, options: PeekOptions | undefined): Promise<Decision> {
      if (options !== undefined) checkOptionNames(options, 'options', ['limit', 'anchor', 'priority'])
      const limits = plans.limitsOf(options?.limit)
      const anchors = plans.anchorsOf(options?.anchor)
      // The class's answer: the policy's window and the class's share window.
      const priority = plans.priorityOf(options?.priority)
      const learnt = await learned(key)
      if (learnt === undefined) return peekOf(plans.windowsOf(key, limits, anchors, priority))
      // Under the learned limit, or the call's own if lower.
      const lower = [Math.min(learnt.limit, limits?.[0] ?? limit)]
      const decision = await peekOf(plans.windowsOf(key, lower, anchors, priority))
      return { ...decision, learned: learnt }
    },
  }
}
