// A limiter's peek: the decision one unit would get now, recording nothing, under the limits the fleet learned for
// the key (one per policy) when it learned some.
import { checkOptionNames } from '../common/validate.js'
import type { Store } from '../store/store.js'
import { type CallPlans, windowRequests } from './call-plans.js'
import type { Decision } from './decision.js'
import type { Window } from './degraded.js'
import type { KeyInput } from './keys.js'
import type { LearnedLimit } from './learned-limits.js'
import type { PeekOptions } from './limiter-types.js'
import type { Policy } from './policy.js'
import { decisionOfWindows } from './priorities.js'

export interface PeeksOptions {
  readonly store: Store
  readonly plans: CallPlans
  /** Runs a store call bounded like a decision; a failure rejects with its StoreError. */
  readonly askStore: <T>(windows: readonly Window[], send: () => Promise<T>) => Promise<T>
  /** Each policy's learned limit, in the limiter's order; undefined when the limiter takes no part in learning. */
  readonly learned: (key: KeyInput) => Promise<readonly (LearnedLimit | undefined)[] | undefined>
  readonly policies: readonly Policy[]
}

export function createPeeks({ store, plans, askStore, learned, policies }: PeeksOptions) {
  const peekOf = (windows: readonly Window[]): Promise<Decision> =>
    askStore(windows, () => store.peek(windowRequests(windows, 1))).then((results) =>
      decisionOfWindows(results, windows, 1),
    )
  /** A peek's decision with what was learned: on each policy's own decision, and on the one it reports. */
  const withLearned = (decision: Decision, learnt: readonly (LearnedLimit | undefined)[]): Decision => {
    const of = (d: Decision): Decision => {
      const one = learnt[policies.findIndex((p) => p.name === d.policy)]
      return one === undefined ? d : { ...d, learned: one }
    }
    const top = of(decision)
    return decision.policies === undefined ? top : { ...top, policies: decision.policies.map(of) }
  }
  return {
    peekOf,
    async peek(key: KeyInput, options: PeekOptions | undefined): Promise<Decision> {
      if (options !== undefined) checkOptionNames(options, 'options', ['limit', 'anchor', 'priority'])
      const limits = plans.limitsOf(options?.limit)
      const anchors = plans.anchorsOf(options?.anchor)
      // The class's answer: the policy's window and the class's share window.
      const priority = plans.priorityOf(options?.priority)
      const learnt = await learned(key)
      if (learnt === undefined || learnt.every((l) => l === undefined)) {
        return peekOf(plans.windowsOf(key, limits, anchors, priority))
      }
      // Each policy under its learned limit, or the call's own if lower.
      const under = policies.map((p, i) => Math.min(learnt[i]?.limit ?? p.limit, limits?.[i] ?? p.limit))
      return withLearned(await peekOf(plans.windowsOf(key, under, anchors, priority)), learnt)
    },
  }
}
