// limitedFetch's `adapt`: what the fleet learns of an upstream's quota from its answers, through the limiter's
// learned limits (kept in the store, so every process holds to them).
import { OptionError } from '../common/errors.js'
import type { KeyInput } from '../limiter/keys.js'
import type { LearnedLimit } from '../limiter/learned-limits.js'
import type { RateLimiter } from '../limiter/limiter-types.js'
import type { Policy } from '../limiter/policy.js'
import { adviceOf, readQuotas } from './quota-headers.js'

/** 'headers': follow the upstream's quota headers; 'aimd': learn from 429s alone; false: learn nothing. */
export type AdaptMode = 'headers' | 'aimd' | false

/** What an answer asks of the fleet: a pause while the quota has nothing left (ms). */
export interface AnswerLesson {
  readonly pauseMs: number | undefined
}

export interface Adapter {
  /** The limit the next attempt is acquired under: the learned one; undefined for the policy's own. */
  limit(): Promise<number | undefined>
  /** Learns from an answer (a failure to keep what was learned is not the caller's: it is dropped). */
  learn(response: Response): Promise<AnswerLesson>
}

type Learner = Pick<RateLimiter, 'learn' | 'learned'> & { readonly policies: readonly Policy[] }

/** The limiter's one rate policy, when it can learn a limit for it; undefined otherwise. */
function learnerOf(limiter: unknown): { learner: Learner; policy: Policy } | undefined {
  const given = limiter as Partial<Learner>
  const [policy] = given.policies ?? []
  if (typeof given.learn !== 'function' || typeof given.learned !== 'function') return undefined
  if (given.policies?.length !== 1 || policy === undefined || policy.concurrency !== undefined) return undefined
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

const NOTHING: AnswerLesson = { pauseMs: undefined }

/**
 * The adapter of one limitedFetch. With 'headers', an answer's quota headers lower the key's limit (a limiter of one
 * rate policy; never above the policy's) and, when they say none is left, ask for a pause until the quota resets,
 * whatever the status; with 'aimd', a 429 halves the key's limit, which then grows back while no 429 comes.
 */
export function createAdapter(limiter: unknown, mode: AdaptMode, key: KeyInput, cost: number | undefined): Adapter {
  const found = mode === false ? undefined : learnerOf(limiter)
  const floor = Math.max(1, cost ?? found?.policy.cost ?? 1)
  const drop = () => undefined
  const limitOf = (learned: LearnedLimit | undefined) =>
    learned === undefined ? undefined : Math.max(learned.limit, floor)
  return {
    limit: found ? () => found.learner.learned(key).then(limitOf, drop) : () => Promise.resolve(undefined),
    async learn(response) {
      if (mode === false) return NOTHING
      if (mode === 'aimd') {
        if (response.status === 429) await found?.learner.learn(key, { source: 'aimd' }).catch(drop)
        return NOTHING
      }
      const quotas = readQuotas(response.headers)
      if (quotas.length === 0) return NOTHING
      const advice = adviceOf(quotas, found?.policy.window ?? 1_000)
      if (found && advice.limit !== undefined) {
        await found.learner.learn(key, { source: 'headers', limit: advice.limit }).catch(drop)
      }
      return { pauseMs: advice.pauseMs }
    },
  }
}
