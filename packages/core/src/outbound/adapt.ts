// limitedFetch's `adapt`: what the fleet learns of an upstream's quota from its answers, through the limiter's
// learned limits (kept in the store, so every process holds to them), one per rate policy.
import { OptionError } from '../common/errors.js'
import type { Decision } from '../limiter/decision.js'
import type { KeyInput } from '../limiter/keys.js'
import { canLearn, type LearnedLimit, type Lesson } from '../limiter/learned-limits.js'
import type { CallCost, CallLimit, RateLimiter } from '../limiter/limiter-types.js'
import type { Policy } from '../limiter/policy.js'
import { adviceOf, readQuotas } from './quota-headers.js'
import { checkQuotas, createQuotaRouter, type QuotaMap, type Target } from './quota-map.js'

/** 'headers': follow the upstream's quota headers; 'aimd': learn from 429s alone; false: learn nothing. */
export type AdaptMode = 'headers' | 'aimd' | false

/** What an answer says: a pause while a quota has nothing left (ms), and what the fleet is to learn. */
export interface Answer {
  readonly pauseMs: number | undefined
  /** A lesson per policy that learns something from the answer. */
  readonly lessons: readonly Lesson[]
}

export interface Adapter {
  /**
   * Admits an attempt by `acquire` under the learned limits (undefined: the policies'). An admission made under a
   * limit that was lowered while it waited (a 429 elsewhere in the fleet), which the lower one would not have made,
   * is refunded and asked again: a waiter queued before the cut does not overshoot the new limit.
   */
  admit(acquire: (limit: CallLimit | undefined) => Promise<Decision>): Promise<Decision>
  /** What an answer to a call admitted by `decision` says; reads nothing but the answer. */
  read(response: Response, decision: Decision): Answer
  /** Learns the lessons (a failure to keep one is not the caller's: it is dropped). */
  teach(lessons: readonly Lesson[]): Promise<void>
}

type Learner = Pick<RateLimiter, 'learn' | 'learned'> &
  Partial<Pick<RateLimiter, 'refund' | 'release'>> & { readonly policies: readonly Policy[] }

/** The limiter's rate policies, which each learn a limit; undefined when it has none or cannot learn. */
function learnerOf(limiter: unknown): { learner: Learner; policies: readonly Policy[] } | undefined {
  const given = limiter as Partial<Learner>
  if (typeof given.learn !== 'function' || typeof given.learned !== 'function') return undefined
  const policies = (given.policies ?? []).filter(canLearn)
  return policies.length > 0 ? { learner: given as Learner, policies } : undefined
}

/**
 * The policies a limitedFetch's answers may bound, with what one of its calls costs in each (a policy's own cost
 * for `'estimate'`, which is known only per call: name the quotas of several policies with `quotas` then).
 */
function targetsOf(policies: readonly Policy[], cost: CallCost | 'estimate' | undefined): Target[] {
  return policies.map((p) => ({
    name: p.name,
    window: p.window,
    cost: typeof cost === 'number' ? cost : typeof cost === 'object' ? (cost[p.name] ?? p.cost) : p.cost,
  }))
}

/** limitedFetch's `adapt` and `quotas`, checked against its limiter. */
export function checkAdapt(
  value: unknown,
  quotas: unknown,
  limiter: unknown,
): { readonly adapt: AdaptMode; readonly quotas: QuotaMap | undefined } {
  if (value !== undefined && value !== 'headers' && value !== 'aimd' && value !== false) {
    throw new OptionError('adapt', value, "'headers' (the default), 'aimd' or false")
  }
  const adapt = value ?? 'headers'
  const found = learnerOf(limiter)
  if (adapt === 'aimd' && found === undefined) {
    throw new OptionError(
      'adapt',
      value,
      "a limiter with a rate policy (from createRateLimiter) for 'aimd', which learns a limit per policy; or 'headers' or false",
    )
  }
  if (quotas !== undefined && adapt !== 'headers') {
    throw new OptionError(
      'quotas',
      quotas,
      "no `quotas` with adapt: 'aimd' or false: it maps the headers adapt: 'headers' reads",
    )
  }
  return { adapt, quotas: checkQuotas(quotas, found?.policies ?? []) }
}

const NOTHING: Answer = { pauseMs: undefined, lessons: [] }

/** The units of `policy` in the window once `decision` was admitted: what the fleet had sent; undefined if unknown. */
function usedOf(decision: Decision, policy: string): number | undefined {
  if (decision.source !== 'store') return undefined
  const own = decision.policies?.find((d) => d.policy === policy) ?? (decision.policy === policy ? decision : undefined)
  return own === undefined ? undefined : own.limit - own.remaining
}

/**
 * The adapter of one limitedFetch. With 'headers', an answer's quota headers lower the limits of the policies they
 * bound (createQuotaRouter; never above a policy's) and, when they say none is left, ask for a pause until the
 * quota resets, whatever the status; with 'aimd', a 429 cuts the key's limit in every rate policy, which then grows
 * back while no 429 comes.
 */
export function createAdapter(
  limiter: unknown,
  mode: AdaptMode,
  key: KeyInput,
  cost: CallCost | 'estimate' | undefined,
  quotas?: QuotaMap,
): Adapter {
  const found = mode === false ? undefined : learnerOf(limiter)
  const targets = found ? targetsOf(found.policies, cost) : []
  const several = (found?.learner.policies.length ?? 0) > 1
  const route = createQuotaRouter(targets, quotas)
  const drop = () => undefined
  // Never below a call's cost: the call would never fit.
  const limitOf = (learned: LearnedLimit | undefined, t: Target) =>
    learned === undefined ? undefined : Math.max(learned.limit, t.cost, 1)
  const limits = (): Promise<(number | undefined)[]> =>
    found
      ? Promise.all(targets.map((t) => found.learner.learned(key, t.name).then((l) => limitOf(l, t), drop)))
      : Promise.resolve([])
  /** The call's limit under the learned ones: a number for a limiter of one policy, else a map of those learned. */
  const callLimit = (under: readonly (number | undefined)[]): CallLimit | undefined => {
    if (!several) return under[0]
    const map: Record<string, number> = {}
    targets.forEach((t, i) => {
      if (under[i] !== undefined) map[t.name] = under[i]
    })
    return Object.keys(map).length > 0 ? map : undefined
  }
  return {
    async admit(acquire) {
      for (;;) {
        const under = await limits()
        const decision = await acquire(callLimit(under))
        if (!found || typeof found.learner.refund !== 'function' || decision.source !== 'store') return decision
        const now = await limits()
        const over = targets.some((t, i) => {
          const lowered = now[i]
          if (lowered === undefined || lowered >= (under[i] ?? Number.POSITIVE_INFINITY)) return false
          return (usedOf(decision, t.name) ?? 0) > lowered
        })
        if (!over) return decision
        // Its units back, and its in-flight slots: the admission asked again takes its own.
        await found.learner.refund(decision).catch(drop)
        await found.learner.release?.(decision).catch(drop)
      }
    },
    read(response, decision) {
      if (mode === false) return NOTHING
      if (mode === 'aimd') {
        if (response.status !== 429 || !found) return NOTHING
        // Which quota the upstream ran out of is not said: every policy is cut, each to what it had sent.
        const lessons = targets.map((t): Lesson => {
          const used = usedOf(decision, t.name)
          return used === undefined ? { source: 'aimd', policy: t.name } : { source: 'aimd', used, policy: t.name }
        })
        return { pauseMs: undefined, lessons }
      }
      const quotas = readQuotas(response.headers)
      if (quotas.length === 0) return NOTHING
      const lessons: Lesson[] = []
      targets.forEach((t, i) => {
        const { limit } = adviceOf(quotas, t.window, (quota) => route(quota) === i)
        if (limit !== undefined) lessons.push({ source: 'headers', limit, policy: t.name })
      })
      return { pauseMs: adviceOf(quotas, 1_000, () => false).pauseMs, lessons }
    },
    async teach(lessons) {
      if (found && lessons.length > 0) {
        await Promise.all(lessons.map((lesson) => found.learner.learn(key, lesson).catch(drop)))
      }
    },
  }
}
