import { parseDuration } from '../common/duration.js'
import { isFleetlimitError, OptionError } from '../common/errors.js'
import { checkInteger, checkOptionNames, isPlainObject, optionalFunction, optionNames } from '../common/validate.js'
import type { Decision } from '../limiter/decision.js'
import type { KeyInput } from '../limiter/keys.js'
import type { CallCost, RateLimiter } from '../limiter/limiter-types.js'
import { MAX_HOLD_MS, MAX_LIMIT, type Policy } from '../limiter/policy.js'
import { type AdaptMode, checkAdapt, createAdapter } from './adapt.js'
import { createCallEnd, type ReadCost } from './call-end.js'
import type { QuotaMap } from './quota-map.js'
import { retryAfterOf } from './retry-after.js'

/** The shape of the global `fetch`. */
export type FetchFunction = (input: string | URL | Request, init?: RequestInit) => Promise<Response>

/**
 * What limitedFetch uses of a limiter: a RateLimiter has it all; a wrapper (to log pauses, say) may stand in,
 * passing `release` on for a limiter with an in-flight policy and `settle` on for the `settle` option.
 */
export type OutboundLimiter = Pick<RateLimiter, 'acquire' | 'pause'> & Partial<Pick<RateLimiter, 'release' | 'settle'>>

export interface LimitedFetchOptions {
  /** The limiter key of the upstream's quota, the same in every process that calls it, e.g. 'api.example.com'. */
  key: KeyInput
  /** Retries after a 429 or 503 that carries Retry-After. Default 2. */
  maxRetries?: number
  /**
   * The budget of one call, in ms or as a duration: its waits for admission (pauses included) and its earlier
   * attempts must fit in it. A retry whose wait would not fit is not made: the last 429/503 is returned as is.
   * An attempt itself is not cut short: give `init.signal` (e.g. `AbortSignal.timeout()`) for that. Default '30s'.
   */
  maxWaitMs?: number | string
  /**
   * Units each attempt consumes: a whole number, or with several policies a map from policy name to cost (an
   * estimate of a call's tokens, say, that `settle` corrects). `'estimate'`, with the limiter's `estimate` option
   * and the `settle` option: the key's estimate at each attempt, learned from what `settle` reads. Default: the
   * limiter's cost.
   */
  cost?: CallCost | 'estimate'
  /**
   * The priority class of each attempt, for a limiter whose policy has `priorities` (acquire's `priority`). Default:
   * the policy's last (lowest) class.
   */
  priority?: string
  /** The longest pause one Retry-After may put on the whole fleet; a longer one is capped to this. Default '1h'. */
  maxPauseMs?: number | string
  /** The fetch to call. Default: the global fetch, looked up at each call (so a test may stub it). */
  fetch?: FetchFunction
  /**
   * How late a request may reach the upstream after its admission (a new connection, a busy event loop): each
   * attempt's unit counts that much longer than the window (acquire's `transitMs`), so that an upstream counting
   * arrivals under the same limit and window sees no more than its quota. Default '100ms' for a limiter of one
   * sliding-log policy without blockFor; 0 (none) for any other, which then needs a longer window as its margin.
   */
  transitMs?: number | string
  /**
   * Reads an attempt's true cost from the upstream's response, e.g. `usage.total_tokens` from a JSON body: a
   * whole number, or a map from policy name to cost (a policy left out keeps the cost it was admitted with).
   * The limiter then settles the attempt's units to it (`limiter.settle`). It gets a copy of the response, whose
   * body it may read: the caller's stays unread. Called for every response the upstream sends, a retried 429
   * included (return 0 for what the upstream does not charge). It does not hold the response up: limitedFetch
   * resolves once the headers are in, as fetch does, and the settle reads its copy as the body arrives. If it
   * throws, the attempt keeps the cost it was admitted with, and the error goes to `onSettleError`. A call its
   * caller aborts keeps what the settle read by then: one cut short keeps the admitted cost, without `onSettleError`.
   */
  settle?: ReadCost
  /**
   * Where an error of `settle` (or of the limiter's settle with its cost) goes, with the copy of the response it
   * was given. Default: console.warn.
   */
  onSettleError?: (error: unknown, response: Response) => void
  /**
   * What the fleet learns of the upstream's quota from its answers, kept in the store so that every process holds
   * to it (see `limiter.peek(key).learned` and the limiter's 'learned' event):
   * - 'headers' (the default): the IETF `RateLimit`/`RateLimit-Policy` fields and the `x-ratelimit-*` family
   *   (OpenAI's `-requests`/`-tokens` too). A quota lower than the limiter's lowers the key's limit (scaled to its
   *   window; never above the configured limit; it lapses two windows after the upstream last stated it), and an
   *   answer that says none is left pauses the key fleet-wide until the quota resets (capped by `maxPauseMs`), and
   *   serves a 429 or 503 as its Retry-After when it has none.
   * - 'aimd', for an upstream that only answers 429: a 429 pauses the fleet for its Retry-After and cuts the key's
   *   limit to 0.7 of what the window held when the refused call was admitted (or of the limit, if lower; at most
   *   once a window, at least 1); it grows back by 2% of the configured limit each window, and stays 4 windows just
   *   under the rate the upstream refused before it grows past it.
   * - false: nothing is learned; a 429 or 503 with Retry-After still pauses the fleet.
   *
   * Each rate policy of the limiter learns its own limit (in-flight slots and calendar periods learn none): with
   * requests and tokens per minute, the `-requests` quota lowers the policy a call counts once in (cost 1) and the
   * `-tokens` quota the other; `quotas` names them otherwise. With 'aimd', a 429 cuts every rate policy.
   */
  adapt?: AdaptMode
  /**
   * With `adapt: 'headers'`: which policy each quota the upstream states bounds, from the quota's name (OpenAI's
   * 'requests' and 'tokens', an IETF RateLimit-Policy item's name, or 'requests' for an unnamed request quota) to
   * a policy's name, or false for none (its "none left" still pauses). A quota left out bounds no policy. Default:
   * a quota named as a policy bounds it; a request quota bounds the policy a call counts once in, a tokens quota
   * the one it counts more in, each the one of the quota's window when several fit; with one policy, every
   * request quota bounds it. E.g. `{ requests: 'rpm', tokens: 'tpm' }`.
   */
  quotas?: QuotaMap
}

const OPTION_NAMES = optionNames<LimitedFetchOptions>({
  key: true,
  maxRetries: true,
  maxWaitMs: true,
  cost: true,
  priority: true,
  maxPauseMs: true,
  fetch: true,
  transitMs: true,
  settle: true,
  onSettleError: true,
  adapt: true,
  quotas: true,
})

const now = () => performance.now()

/**
 * A `fetch` that keeps the whole fleet within an upstream's quota: each attempt first waits for admission by
 * `limiter.acquire(key)`. A 429 or 503 with Retry-After pauses the key for every process sharing the limiter's
 * store, so the fleet stops at once rather than each process learning it from its own 429, and the request is
 * tried again once the pause is over, within `maxWaitMs`. A 429/503 without Retry-After, any other status, and a
 * request whose body cannot be sent twice (a stream) are answered as the upstream answered.
 *
 * With an in-flight policy (`concurrency`), an attempt's slot is given back once the upstream is done with it:
 * when the caller has read the response's body to its end or cancelled it (read or cancel it, or the slot is
 * held until it expires), when the fetch throws, or before a 429 is retried. With `settle`, the slot is given
 * back once the true cost is recorded too.
 *
 * @example
 * ```ts
 * const limiter = createRateLimiter({ store: redisStore(new Redis()), limit: 20, window: '1s', name: 'github' })
 * const github = limitedFetch(limiter, { key: 'api.github.com', maxWaitMs: '10s' })
 * const response = await github('https://api.github.com/repos/nodejs/node')
 *
 * // An LLM API's quotas: requests and tokens per minute, 5 calls in flight; a call's tokens known from its answer.
 * const llm = limitedFetch(llmLimiter, {
 *   key: 'api.llm.test',
 *   cost: { rpm: 1, tpm: 1_000 }, // the request's max_tokens plus its prompt: an upper bound, settled down
 *   settle: async (response) => ({ tpm: response.ok ? (await response.json()).usage.total_tokens : 0 }),
 * })
 * ```
 */
export function limitedFetch(limiter: OutboundLimiter, options: LimitedFetchOptions): FetchFunction {
  const config = resolveOptions(limiter, options)
  const { key, maxRetries, maxWaitMs, maxPauseMs, cost, priority, transitMs } = config
  const send: FetchFunction = config.fetch ?? ((input, init) => globalThis.fetch(input, init))
  const end = createCallEnd({ limiter, settle: config.settle, onSettleError: config.onSettleError })
  const adapter = createAdapter(limiter, config.adapt, key, cost, config.quotas)

  return async (input, init) => {
    const deadline = now() + maxWaitMs
    const signal = signalOf(input, init)
    const replayable = canReplay(input, init)
    // The answer a retry replaces: handed back as is (body unread) when the retry cannot be made.
    let last: Response | undefined
    for (let attempt = 0; ; attempt++) {
      let decision: Decision
      try {
        signal?.throwIfAborted()
        decision = await adapter.admit((limit) =>
          limiter.acquire(key, {
            maxWaitMs: Math.max(0, Math.floor(deadline - now())),
            ...(limit !== undefined && { limit }),
            ...(signal && { signal }),
            ...(cost !== undefined && { cost }),
            ...(priority !== undefined && { priority }),
            ...(transitMs > 0 && { transitMs }),
          }),
        )
      } catch (error) {
        if (last && isFleetlimitError(error, 'ERR_FLEETLIMIT_TIMEOUT')) return last
        await discard(last)
        throw error
      }
      // Its body is never read: cancelling it frees the connection.
      await discard(last)
      if (!end.canEnd(decision)) {
        throw new OptionError('limiter', limiter, 'a limiter with release() for an in-flight policy')
      }
      let response: Response
      try {
        response = await send(input, init)
      } catch (error) {
        await end.failed(decision)
        throw error
      }
      // What the answer says of the quota: the fleet is paused first, then learns (a store call or two), so that
      // as few calls as possible are admitted in between.
      const answer = adapter.read(response, decision)
      const refused = response.status === 429 || response.status === 503
      const waitMs = refused ? (retryAfterOf(response.headers) ?? answer.pauseMs) : undefined
      if (waitMs === undefined) {
        // An answer that says the quota has nothing left: the fleet waits for its reset.
        if (answer.pauseMs) await limiter.pause(key, Math.min(answer.pauseMs, maxPauseMs)).catch(() => {})
        await adapter.teach(answer.lessons)
        return end.handOver(decision, response, signal)
      }
      const pauseMs = Math.min(waitMs, maxPauseMs)
      // The whole fleet stops, whether or not this call tries again.
      if (pauseMs > 0) {
        try {
          await limiter.pause(key, pauseMs)
        } catch (error) {
          await discard(await end.finish(decision, response, signal))
          throw error
        }
      }
      await adapter.teach(answer.lessons)
      if (attempt >= maxRetries || !replayable || pauseMs > deadline - now()) {
        return end.handOver(decision, response, signal)
      }
      // Ended before the next acquire, which may need its slot.
      last = await end.finish(decision, response, signal)
    }
  }
}

interface ResolvedOptions {
  readonly key: KeyInput
  readonly maxRetries: number
  readonly maxWaitMs: number
  readonly maxPauseMs: number
  readonly cost: CallCost | 'estimate' | undefined
  readonly priority: string | undefined
  readonly fetch: FetchFunction | undefined
  readonly transitMs: number
  readonly settle: ReadCost | undefined
  readonly onSettleError: (error: unknown, response: Response) => void
  readonly adapt: AdaptMode
  readonly quotas: QuotaMap | undefined
}

// The transit a request to an upstream is given by default: a new connection arrived 76 ms late in a fleet's
// measurement, later ones 1 to 5 ms.
const DEFAULT_TRANSIT_MS = 100

/**
 * Whether the limiter can count a unit longer than its window (acquire's transitMs): one plain sliding log (an
 * in-flight policy holds slots, not units).
 */
function takesTransit(limiter: unknown): boolean {
  const { policies } = limiter as { policies?: readonly Partial<Policy>[] }
  const [only] = policies ?? []
  return (
    policies?.length === 1 &&
    only?.algorithm === 'sliding-log' &&
    only.blockFor === 0 &&
    only.concurrency === undefined &&
    only.priorities === undefined
  )
}

function resolveOptions(limiter: unknown, options: LimitedFetchOptions): ResolvedOptions {
  const given = limiter as Partial<OutboundLimiter> | null
  if (typeof given?.acquire !== 'function' || typeof given.pause !== 'function') {
    throw new OptionError('limiter', limiter, 'a limiter from createRateLimiter() as the first argument')
  }
  checkOptionNames(options, 'limitedFetch', OPTION_NAMES)
  const settle = optionalFunction(options.settle, 'settle')
  if (settle && typeof given.settle !== 'function') {
    throw new OptionError('limiter', limiter, 'a limiter with settle() for the `settle` option')
  }
  if (options.cost === 'estimate' && !settle) {
    throw new OptionError(
      'settle',
      settle,
      "a function that reads each answer's true cost: `cost: 'estimate'` learns the estimate from it",
    )
  }
  return Object.freeze({
    key: checkKey(options.key),
    maxRetries: checkInteger(options.maxRetries ?? 2, 'maxRetries', 0, 100),
    maxWaitMs: parseDuration(options.maxWaitMs ?? 30_000, 'maxWaitMs', { min: 0, max: MAX_HOLD_MS }),
    maxPauseMs: parseDuration(options.maxPauseMs ?? 3_600_000, 'maxPauseMs', { max: MAX_HOLD_MS }),
    cost: checkCallCost(options.cost),
    // The limiter checks the name against its classes at each acquire.
    priority: checkPriority(options.priority),
    fetch: optionalFunction(options.fetch, 'fetch'),
    transitMs:
      options.transitMs === undefined
        ? takesTransit(limiter)
          ? DEFAULT_TRANSIT_MS
          : 0
        : parseDuration(options.transitMs, 'transitMs', { min: 0, max: MAX_HOLD_MS }),
    settle,
    onSettleError: optionalFunction(options.onSettleError, 'onSettleError') ?? warnSettleError,
    ...checkAdapt(options.adapt, options.quotas, limiter),
  })
}

const warnSettleError = (error: unknown) =>
  console.warn('fleetlimit: limitedFetch could not settle a call, which keeps the cost it was admitted with:', error)

/** A class's name: a string (which class, the limiter checks). */
function checkPriority(priority: unknown): string | undefined {
  if (priority === undefined || typeof priority === 'string') return priority
  throw new OptionError('priority', priority, "a priority class's name, such as 'interactive'")
}

/** A cost: a whole number, or a map of them (whose policy names the limiter checks when it acquires), or 'estimate'. */
function checkCallCost(cost: unknown): CallCost | 'estimate' | undefined {
  if (cost === undefined || cost === 'estimate') return cost
  if (!isPlainObject(cost)) return checkInteger(cost, 'cost', 1, MAX_LIMIT)
  for (const [name, units] of Object.entries(cost)) checkInteger(units, `cost.${name}`, 1, MAX_LIMIT)
  return Object.freeze({ ...cost }) as CallCost
}

function checkKey(key: unknown): KeyInput {
  const valid =
    typeof key === 'string' ||
    (typeof key === 'object' &&
      key !== null &&
      typeof (key as { tenant?: unknown }).tenant === 'string' &&
      ['undefined', 'string'].includes(typeof (key as { route?: unknown }).route))
  if (!valid) {
    throw new OptionError(
      'key',
      key,
      "the limiter key of the upstream's quota: a string such as 'api.example.com', or { tenant, route? } of strings",
    )
  }
  return key as KeyInput
}

/** The signal fetch obeys: init's (null for none) over the Request's. */
function signalOf(input: string | URL | Request, init: RequestInit | undefined): AbortSignal | undefined {
  if (init?.signal !== undefined) return init.signal ?? undefined
  return typeof input === 'object' && 'signal' in input ? input.signal : undefined
}

/** Whether the request can be sent again: no body, or one fetch reads afresh each time (not a stream). */
function canReplay(input: string | URL | Request, init: RequestInit | undefined): boolean {
  const body: unknown = init?.body
  if (body !== undefined && body !== null) {
    return (
      typeof body === 'string' ||
      body instanceof ArrayBuffer ||
      ArrayBuffer.isView(body) ||
      body instanceof URLSearchParams ||
      body instanceof Blob ||
      body instanceof FormData
    )
  }
  // A Request's body is a stream, read by the first attempt.
  return !(typeof input === 'object' && 'body' in input && input.body !== null)
}

async function discard(response: Response | undefined): Promise<void> {
  await response?.body?.cancel().catch(() => {})
}
