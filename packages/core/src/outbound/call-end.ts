import type { Decision } from '../limiter/decision.js'
import type { CallCost, RateLimiter } from '../limiter/limiter-types.js'
import { onBodyEnd } from './body-end.js'

/** Reads an attempt's true cost from the upstream's response (a copy of it: the caller's body stays unread). */
export type ReadCost = (response: Response) => CallCost | Promise<CallCost>

/** What ends an admitted attempt: a release of its in-flight slots, and a settle of its units to the true cost. */
export interface CallEndOptions {
  readonly limiter: Partial<Pick<RateLimiter, 'release' | 'settle'>>
  readonly settle: ReadCost | undefined
  readonly onSettleError: (error: unknown, response: Response) => void
}

/** Whether an admission holds in-flight slots: only those get `extend` (see Decision). */
const holdsSlots = (decision: Decision) => decision.extend !== undefined

/**
 * The end of each admitted attempt of limitedFetch. Its slots are given back once the upstream is done with it
 * (the body read to its end or cancelled, or the fetch failed) and, with `settle`, once its true cost is
 * recorded, so that a slot also bounds the calls whose cost the fleet does not know yet. Nothing here rejects:
 * a failed release leaves the slot to expire (the limiter logs a store outage), and a failed settle leaves the
 * acquired cost in place and goes to `onSettleError`.
 */
export function createCallEnd({ limiter, settle, onSettleError }: CallEndOptions) {
  const release = async (decision: Decision) => {
    if (holdsSlots(decision)) await limiter.release?.(decision).catch(() => {})
  }

  /**
   * Settles from a copy of the response (a branch of its body: the original reads as if untouched); undefined
   * without `settle`. The copy's body is cancelled once read, so a cost read from the headers alone leaves nothing
   * buffered.
   */
  function settleFrom(decision: Decision, response: Response, signal: AbortSignal | undefined) {
    if (!settle || !limiter.settle) return undefined
    const send = limiter.settle
    const copy = response.clone()
    return (async () => {
      try {
        await send(decision, { cost: await settle(copy) })
      } catch (error) {
        // A caller that aborted the call cut the body short: nothing went wrong in the settle.
        if (!signal?.aborted) onSettleError(error, copy)
      } finally {
        // Not awaited: a branch's cancel settles only once the other branch is done too.
        void copy.body?.cancel().catch(() => {})
      }
    })()
  }

  /**
   * The original's branch, read from now on through a stream of ours, so that fetch cannot cancel it. On abort,
   * fetch cancels a response body no one holds and rethrows, unhandled, what that cancel rejects with: once the
   * copy's branch is cancelled, the abort reason. A held body refuses with the one error fetch ignores; the abort
   * still reaches the caller's reads. Without a signal, fetch cancels nothing: the response stays as it is.
   */
  const hold = (response: Response, signal: AbortSignal | undefined, end?: () => void) =>
    end || signal ? onBodyEnd(response, end ?? (() => {})) : response

  return {
    /** Whether the limiter can end this admission: a wrapper without release() cannot free slots. */
    canEnd: (decision: Decision) => !holdsSlots(decision) || typeof limiter.release === 'function',

    /** The response for the caller: as it is, or with slots or a signal and settle, one read through ours. */
    handOver(decision: Decision, response: Response, signal: AbortSignal | undefined): Response {
      const settled = settleFrom(decision, response, signal)
      if (!holdsSlots(decision)) return settled ? hold(response, signal) : response
      let bodyDone: () => void = () => {}
      const read = new Promise<void>((resolve) => {
        bodyDone = resolve
      })
      const handed = hold(response, signal, () => bodyDone())
      void Promise.all([read, settled]).then(() => release(decision))
      return handed
    },

    /**
     * An answer not handed over (a 429 to retry, unread): settled, then its slots released. Returns the response
     * to keep in its place (with a signal, its body held from fetch's cancel), to discard or hand back later.
     */
    async finish(decision: Decision, response: Response, signal: AbortSignal | undefined): Promise<Response> {
      const settled = settleFrom(decision, response, signal)
      const kept = settled ? hold(response, signal) : response
      await settled
      await release(decision)
      return kept
    },

    /** The fetch failed: its slots released; its units stay, as the upstream may have counted the call. */
    failed: release,
  }
}

export type CallEnd = ReturnType<typeof createCallEnd>
