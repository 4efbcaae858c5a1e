// limitedFetch's `adapt`: what the fleet learns of an upstream's quota from its answers, through the limiter's
// learned limits (kept in the store, so every process holds to them).
import { OptionError } from '../common/errors.js'
import type { Decision } from '../limiter/decision.js'
import type { KeyInput } from '../limiter/keys.js'
import type { LearnedLimit, Lesson } from '../limiter/learned-limits.js'
import type { RateLimiter } from '../limiter/limiter-types.js'
import type { Policy } from '../limiter/policy.js'
import { adviceOf, readQuotas } from './quota-headers.js'

/** 'headers': follow the upstream's quota headers; 'aimd': learn from 429s alone; false: learn nothing. */
export type AdaptMode = 'headers' | 'aimd' | false

/** What an answer says: a pause while the quota has nothing left (ms), and what the fleet is to learn. */
export interface Answer {
  readonly pauseMs: number | undefined
  readonly lesson: Lesson | undefined
}

export interface Adapter {
  /**
   * Admits an attempt by `acquire` under the learned limit (undefined: the policy's). An admission made under a
   * limit that was lowered while it waited (a 429 elsewhere in the fleet), which the lower one would not have made,
   * is refunded and asked again: a waiter queued before the cut does not overshoot the new limit.
   */
  admit(acquire: (limit: number | undefined) => Promise<Decision>): Promise<Decision>
  /** What an answer to a call admitted by `decision` says; reads nothing but the answer. */
  read(response: Response, decision: Decision): Answer
  /** Learns a lesson (a failure to keep it is not the caller's: it is dropped). */
  teach(lesson: Lesson | undefined): Promise<void>
}

type Learner = Pick<RateLimiter, 'learn' | 'learned'> &
  Partial<Pick<RateLimiter, 'refund'>> & { readonly policies: readonly Policy[] }

/** The limiter's one rate policy, when it can learn a limit for it; undefined otherwise. */
function learnerOf(limiter: unknown): { learner: Learner; policy: Policy } | undefined {
  const given = limiter as Partial<Learner>
  const [policy] = given.policies ?? []
  if (typeof given.learn !== 'function' || typeof given.learned !== 'function') return undefined
  if (given.policies?.length !== 1 || policy === undefined) return undefined
  if (policy.concurrency !== undefined || policy.period !== undefined) return undefined
  return { learner: given as Learner, policy }
}

export function checkAdapt(value: unknown, limiter: unknown): AdaptMode {
  if (value === undefined) return 'headers'
  if (value !== 'headers' && value !== 'aimd' && value !== false) {
    throw new OptionError('adapt', value, "'headers' (the default), 'aimd' or false")
  }
  if (value === 'aimd' && learnerOf(limiter) === undefined) {
    throw new OptionError(
      'adapt',
      value,
      "a limiter of one rate policy (from createRateLimiter) for 'aimd', which learns one limit per key; or 'headers' or false",
    )
  }
  return value
}

const NOTHING: Answer = { pauseMs: undefined, lesson: undefined }

/**
 * The adapter of one limitedFetch. With 'headers', an answer's quota headers lower the key's limit (a limiter of one
 * rate policy; never above the policy's) and, when they say none is left, ask for a pause until the quota resets,
 * whatever the status; with 'aimd', a 429 cuts the key's limit, which then grows back while no 429 comes.
 */
export function createAdapter(limiter: unknown, mode: AdaptMode, key: KeyInput, cost: number | undefined): Adapter {
  const found = mode === false ? undefined : learnerOf(limiter)
  const floor = Math.max(1, cost ?? found?.policy.cost ?? 1)
  const drop = () => undefined
  const limitOf = (learned: LearnedLimit | undefined) =>
    learned === undefined ? undefined : Math.max(learned.limit, floor)
  const limit = found ? () => found.learner.learned(key).then(limitOf, drop) : () => Promise.resolve(undefined)
  return {
    async admit(acquire) {
      for (;;) {
        const under = await limit()
        const decision = await acquire(under)
        if (!found || typeof found.learner.refund !== 'function' || decision.source !== 'store') return decision
        const now = await limit()
        const lowered = now !== undefined && now < (under ?? Number.POSITIVE_INFINITY)
        if (!lowered || decision.limit - decision.remaining <= now) return decision
        await found.learner.refund(decision).catch(drop)
      }
    },
    read(response, decision) {
      if (mode === false) return NOTHING
      if (mode === 'aimd') {
        if (response.status !== 429 || !found) return NOTHING
        // The units in the window once this call was admitted: what the fleet sent as the upstream refused.
        const used = decision.source === 'store' ? decision.limit - decision.remaining : undefined
        return { pauseMs: undefined, lesson: used === undefined ? { source: 'aimd' } : { source: 'aimd', used } }
      }
      const quotas = readQuotas(response.headers)
      if (quotas.length === 0) return NOTHING
      const advice = adviceOf(quotas, found?.policy.window ?? 1_000)
      const lesson: Lesson | undefined =
        found && advice.limit !== undefined ? { source: 'headers', limit: advice.limit } : undefined
      return { pauseMs: advice.pauseMs, lesson }
    },
    async teach(lesson) {
      if (lesson !== undefined) await found?.learner.learn(key, lesson).catch(drop)
    },
  }
}
