import { OptionError } from '../common/errors.js'
import { combine, type Decision } from '../limiter/decision.js'
import { type KeyInput, windowKey } from '../limiter/keys.js'
import { defaultCostOf } from '../limiter/limiter-options.js'
import { storeOf } from '../limiter/limiter-stores.js'
import type { RateLimiter } from '../limiter/limiter-types.js'
import { type Policy, policyKeyName } from '../limiter/policy.js'

/** How one limiter's calls map to store keys: its store, and each policy's key name and scope. */
interface LimiterKeys {
  readonly limiter: RateLimiter
  /** The limiter's store; the limiter itself when it has none known (not made by createRateLimiter). */
  readonly store: object
  readonly keyNames: readonly string[]
  readonly defaultCost: number
}

/** A call one middleware made for a request: what it was counted under, and its decision to come. */
interface Counted {
  readonly keys: LimiterKeys
  readonly input: KeyInput
  readonly cost: number | undefined
  readonly decision: Promise<Decision>
  /** Its store keys, one per policy: worked out only when a later middleware on the same store asks. */
  storeKeys?: readonly string[]
}

/** What the middlewares did with one request: the limiters that saw it, and the calls they made. */
interface RequestRecord {
  readonly seen: RateLimiter[]
  readonly counted: Counted[]
}

/**
 * Per request (the framework's request object: Express's req, Koa's ctx, Fastify's request): what it was counted
 * under so far, for the middlewares it passes next. Kept on the request under a symbol, so it goes with it: a
 * WeakMap entry per request costs every garbage collection more.
 */
const RECORD = Symbol('fleetlimit.requestRecord')
type Recorded = { [RECORD]?: RequestRecord }
const recordOf = (req: object) => (req as Recorded)[RECORD]

export interface RequestCounts {
  /** Marks the request as seen by this limiter: false when it was already (it passed this middleware, or another built on the limiter). */
  enter(req: object): boolean
  /**
   * The decision earlier middlewares made on every store key this call would count in, to reuse; undefined when
   * they counted in none of them. Throws an OptionError when they counted in some but not all, or at another cost:
   * a request is counted once per key, and that call cannot be.
   */
  earlier(req: object, input: KeyInput, cost: number | undefined): Promise<Decision> | undefined
  /** Remembers a call made for the request, for the middlewares after this one. */
  counted(req: object, input: KeyInput, cost: number | undefined, decision: Promise<Decision>): void
}

/**
 * What an HTTP limiter knows of the calls other middlewares made for a request, so that a request is counted once
 * per store key: a second middleware whose policies were all counted reuses their decisions (and adds no headers,
 * settles nothing: the first one releases and refunds).
 */
export function createRequestCounts(limiter: RateLimiter): RequestCounts {
  const keys: LimiterKeys = {
    limiter,
    store: storeOf(limiter) ?? limiter,
    keyNames: limiter.policies.map(policyKeyName),
    defaultCost: defaultCostOf(limiter.policies),
  }
  return {
    enter(req) {
      const record = recordOf(req)
      if (record === undefined) {
        ;(req as Recorded)[RECORD] = { seen: [limiter], counted: [] }
        return true
      }
      if (record.seen.includes(limiter)) return false
      record.seen.push(limiter)
      return true
    },
    earlier(req, input, cost) {
      const counted = recordOf(req)?.counted
      // The first middleware of a request: nothing counted, nothing built.
      if (counted === undefined || counted.length === 0) return undefined
      const before = counted.filter((c) => c.keys.store === keys.store)
      if (before.length === 0) return undefined
      return reuse(keys, storeKeysOf(keys, input), cost, before)
    },
    counted(req, input, cost, decision) {
      recordOf(req)?.counted.push({ keys, input, cost, decision })
    },
  }
}

function storeKeysOf({ limiter, keyNames }: LimiterKeys, input: KeyInput): string[] {
  return limiter.policies.map((policy, i) => windowKey(keyNames[i] as string, policy.scope, input))
}

/** A call's cost in one of its limiter's windows: one slot in an in-flight window. */
function costIn({ limiter, defaultCost }: LimiterKeys, i: number, cost: number | undefined): number {
  return limiter.policies[i]?.concurrency !== undefined ? 1 : (cost ?? defaultCost)
}

function reuse(
  keys: LimiterKeys,
  mine: readonly string[],
  cost: number | undefined,
  before: readonly Counted[],
): Promise<Decision> | undefined {
  const found: { counted: Counted; index: number }[] = []
  for (const [i, key] of mine.entries()) {
    for (const counted of before) {
      counted.storeKeys ??= storeKeysOf(counted.keys, counted.input)
      const index = counted.storeKeys.indexOf(key)
      if (index === -1) continue
      const theirs = costIn(counted.keys, index, counted.cost)
      const name = (keys.limiter.policies[i] as Policy).name
      if (costIn(keys, i, cost) !== theirs) {
        throw new OptionError(
          'cost',
          cost ?? keys.defaultCost,
          `the cost an earlier rateLimit middleware counted this request at on policy "${name}" (${theirs}): a ` +
            'request is counted once per policy key, so a second middleware on it cannot count it at another cost; ' +
            'give them the same cost, or decide the request in one middleware',
        )
      }
      found.push({ counted, index })
      break
    }
  }
  if (found.length === 0) return undefined
  if (found.length < mine.length) {
    const { counted, index } = found[0] as (typeof found)[number]
    const name = (counted.keys.limiter.policies[index] as Policy).name
    throw new OptionError(
      'policies',
      name,
      `policies this request was not counted in yet: policy "${name}" counted it in an earlier rateLimit middleware ` +
        "on the same store, and this middleware's other policies did not; a request is counted once per policy " +
        'key, and one call counts in all its policies or none. Decide the policies of a request in one middleware ' +
        `(policies: [...]), or name "${name}" in only one of them`,
    )
  }
  return Promise.all(
    found.map(({ counted, index }) =>
      counted.decision.then((decision) => (decision.policies?.[index] ?? decision) as Decision),
    ),
  ).then(combine)
}
