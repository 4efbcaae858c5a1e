// What a request the limiter could not decide on gets: what `onError` says, else the default for the error (a
// 500 problem+json for fleetlimit's own errors, logged once per kind; your own errors thrown to the framework).
import { describe, type FleetlimitError, isFleetlimitError, OptionError } from '../common/errors.js'
import type { HttpOutcome } from './adapter-contract.js'
import { NEXT, requestError, respond } from './answers.js'
import type { WarnOnce } from './config-warnings.js'
import type { HttpRateLimitOptions, RequestErrorAction } from './http-options.js'

const ERROR_ACTIONS: readonly RequestErrorAction[] = ['respond', 'allow', 'throw']

/** A request that could not be decided on: what onError says, else the default for the error. */
export function createRequestFailure<Req>(
  onError: HttpRateLimitOptions<Req>['onError'],
  warnOnce: WarnOnce,
): (req: Req, error: unknown) => Promise<HttpOutcome> {
  return async function failed(req: Req, error: unknown): Promise<HttpOutcome> {
    const ours = isFleetlimitError(error)
    let action: unknown = onError ? await onError(error, req) : undefined
    if (action !== undefined && !ERROR_ACTIONS.includes(action as RequestErrorAction)) {
      const got = describe(action)
      warnOnce(
        'on-error-result',
        () => `onError(error, req) returned ${got}, not 'respond', 'allow' or 'throw': such requests get the default.`,
      )
      action = undefined
    }
    action ??= ours ? 'respond' : 'throw'
    if (action === 'throw') throw error
    if (action === 'allow') return NEXT
    const option = ours && error instanceof OptionError ? error.option : undefined
    if (ours && !onError) {
      const text = (error as Error).message.replace(/^fleetlimit: /, '')
      warnOnce(
        `request-error ${(error as FleetlimitError).code} ${option ?? ''}`,
        () =>
          `a request could not be rate limited, so it was answered 500 (application/problem+json): ${text} ` +
          'Later requests failing the same way get the same answer, unlogged; pass onError(error, req) to decide what they get.',
      )
    }
    return respond(500, {}, requestError(ours ? (error as FleetlimitError).code : undefined, option), undefined)
  }
}
