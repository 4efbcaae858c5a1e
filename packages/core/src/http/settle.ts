import { describe } from '../common/errors.js'
import type { Decision } from '../limiter/decision.js'
import type { RefundResult } from '../limiter/limiter-types.js'
import { shown, type WarnOnce } from './config-warnings.js'
import type { ResolvedHttpOptions } from './resolved-http-options.js'

/** What `settle` did, since this HTTP limiter was created. */
export interface HttpLimiterStats {
  /** In-flight slots given back at the end of their requests (`concurrency`, in-flight policies). */
  readonly releases: number
  /**
   * Releases the store failed: such a slot is held until it expires (`slotTtlMs`); the limiter logs the first
   * failure of an outage.
   */
  readonly releaseErrors: number
  /** Requests whose units were given back (skipFailedRequests, skipSuccessfulRequests). */
  readonly refunds: number
  /**
   * Refunds the store failed; the limiter logs the first of an outage, saying whether its units may still count (a
   * refund that got no answer may have been applied).
   */
  readonly refundErrors: number
}

/** What `onResponseEnd` reads of a Node response (`http.ServerResponse`: Express's `res`, Koa's `ctx.res`, Fastify's `reply.raw`). */
export interface NodeResponse {
  readonly writableFinished: boolean
  /** Its connection is gone (the client went away), maybe before the response finished. */
  readonly destroyed?: boolean
  readonly statusCode: number
  once(event: 'finish' | 'close', listener: () => void): unknown
  off(event: 'finish' | 'close', listener: () => void): unknown
}

type Ended = (finished: boolean, status: number) => void

/** What waits for each response's end: one listener pair per response, however many limiters are stacked. */
const waiting = new WeakMap<NodeResponse, Ended[]>()

/**
 * Calls `ended` once, when a Node response has finished (`finished` true) or its connection closed before it did
 * (false), with the status sent: what an adapter hands to `settle`. A response that has ended already (another
 * middleware answered while the limiter decided) is reported at once. `ended` must not throw: it runs in an event
 * listener.
 */
export function onResponseEnd(res: NodeResponse, ended: Ended): void {
  if (res.writableFinished || res.destroyed) {
    ended(res.writableFinished, res.statusCode)
    return
  }
  const others = waiting.get(res)
  if (others) {
    others.push(ended)
    return
  }
  const callbacks = [ended]
  waiting.set(res, callbacks)
  const end = (finished: boolean) => {
    res.off('finish', onFinish)
    res.off('close', onClose)
    waiting.delete(res)
    for (const callback of callbacks) callback(finished, res.statusCode)
  }
  const onFinish = () => end(true)
  // 'close' follows 'finish' too; first, it means the client went away before the response was sent.
  const onClose = () => end(res.writableFinished)
  res.once('finish', onFinish)
  res.once('close', onClose)
}

/** What an HTTP limiter does once a response has ended. */
export interface Settler<Req, Res> {
  /**
   * `skipFailedRequests` or `skipSuccessfulRequests` is set, or a policy is in-flight: an admitted request's
   * decision is to be settled once its response ends. Adapters listen for the end only then.
   */
  readonly settles: boolean
  /**
   * Releases an admitted decision's in-flight slots, and refunds its units if this request should not count:
   * call it once, when the response has finished (`finished` true, with the status sent) or the connection
   * closed before (`finished` false). Never rejects: a failed release or refund is counted in `stats()`. Resolves
   * (once both are done) to the refund made, or undefined.
   */
  settle(
    req: Req,
    res: Res,
    decision: Decision | undefined,
    finished: boolean,
    status: number,
  ): Promise<RefundResult | undefined>
  stats(): HttpLimiterStats
}

export function createSettler<Req, Res>(
  { limiter, skipFailed, skipSuccessful, wasSuccessful, inFlight }: ResolvedHttpOptions<Req, Res>,
  warnOnce: WarnOnce,
): Settler<Req, Res> {
  const counters = { releases: 0, releaseErrors: 0, refunds: 0, refundErrors: 0 }
  const refunds = skipFailed || skipSuccessful
  const releases = inFlight.size > 0
  return {
    settles: refunds || releases,
    async settle(req, res, decision, finished, status) {
      if (!decision?.allowed) return undefined
      // At once, whatever requestWasSuccessful takes: a freed slot admits a waiting request anywhere.
      const released = releases ? release(decision) : undefined
      const refunded = refunds ? refund(req, res, decision, finished, status) : undefined
      await released
      return refunded
    },
    stats: () => ({ ...counters }),
  }

  async function release(decision: Decision): Promise<void> {
    try {
      const result = await limiter.release(decision)
      counters.releases += result.slots
    } catch {
      // The limiter logged the failure (once an outage); the slot comes back when it expires.
      counters.releaseErrors++
    }
  }

  async function refund(
    req: Req,
    res: Res,
    decision: Decision,
    finished: boolean,
    status: number,
  ): Promise<RefundResult | undefined> {
    // A closed connection is a failure, whatever the function would say of a response never sent.
    const succeeded = finished ? await successOf(req, res, status) : false
    if (succeeded === undefined || !(succeeded ? skipSuccessful : skipFailed)) return undefined
    try {
      const result = await limiter.refund(decision)
      if (result.outcome === 'refunded') counters.refunds++
      return result
    } catch {
      // The limiter logged the failure, and whether the units stayed (once an outage); the request is over:
      // nothing to throw to.
      counters.refundErrors++
      return undefined
    }
  }

  /** Whether a finished request succeeded; undefined (it stays counted) when requestWasSuccessful fails. */
  async function successOf(req: Req, res: Res, status: number): Promise<boolean | undefined> {
    if (!wasSuccessful) return status < 400
    let result: unknown
    try {
      result = await wasSuccessful(req, res)
    } catch (error) {
      const text = shown(error instanceof Error ? error.message : String(error))
      warnOnce('success-threw', () => `requestWasSuccessful(req, res) threw ${text}: such requests stay counted.`)
      return undefined
    }
    if (typeof result === 'boolean') return result
    warnOnce(
      'success-not-boolean',
      () =>
        `requestWasSuccessful(req, res) returned ${describe(result)}, not true or false: such requests stay counted.`,
    )
    return undefined
  }
}
