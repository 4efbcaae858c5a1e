/** Who made a decision: the shared store, this process's local tier, the fail-open fallback window, or nobody (failing open unlimited). */
export type DecisionSource = 'store' | 'local' | 'fallback' | 'open'

export interface Decision {
  readonly allowed: boolean
  /** The policy's limit (the fallback limit when `source` is 'fallback'). */
  readonly limit: number
  /** Units left in the window after this decision. */
  readonly remaining: number
  /** 0 when allowed; else the exact wait in ms until this cost fits. */
  readonly retryAfterMs: number
  /** Time in ms until the window holds no unit of this key (0 when empty). */
  readonly resetMs: number
  readonly source: DecisionSource
  /** The name of the policy that made this decision: with several policies, the one that binds. */
  readonly policy: string
  /** With several policies: each one's decision, in the limiter's order. */
  readonly policies?: readonly Decision[]
}
