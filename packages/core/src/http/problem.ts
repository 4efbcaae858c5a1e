import type { Decision } from '../limiter/decision.js'

/** A response body with its media type. */
export interface ResponseBody {
  readonly contentType: string
  readonly body: string
}

const QUOTA_EXCEEDED = 'https://iana.org/assignments/http-problem-types#quota-exceeded'

/**
 * The default denial: an RFC 9457 problem document of the quota-exceeded type, naming the violated
 * policies (the `violated-policies` member the RateLimit draft defines) and the wait in seconds.
 */
export function quotaExceededBody(decision: Decision, status: number): ResponseBody {
  // A shadow policy violates nothing: it only measures.
  const violated = (decision.policies ?? [decision]).filter((d) => !d.allowed && !d.shadow).map((d) => d.policy)
  const retryAfter = Math.max(1, Math.ceil(decision.retryAfterMs / 1000))
  const problem = {
    type: QUOTA_EXCEEDED,
    title: 'Too Many Requests',
    status,
    detail: `Quota exceeded for policy "${decision.policy}"; retry in ${retryAfter} s.`,
    'violated-policies': violated,
    'retry-after': retryAfter,
  }
  return { contentType: 'application/problem+json', body: JSON.stringify(problem) }
}

/** The answer while the store is failing and the policy fails closed: the client did nothing wrong. */
export function storeUnavailableBody(): ResponseBody {
  const problem = {
    type: 'about:blank',
    title: 'Service Unavailable',
    status: 503,
    detail: 'The rate limiter cannot reach its store; retry shortly.',
  }
  return { contentType: 'application/problem+json', body: JSON.stringify(problem) }
}

/** A user's `message`: a string is sent as text, anything else as JSON. */
export function customBody(message: unknown): ResponseBody {
  return typeof message === 'string'
    ? { contentType: 'text/plain; charset=utf-8', body: message }
    : { contentType: 'application/json; charset=utf-8', body: JSON.stringify(message) }
}

/**
 * The default answer to a request the limiter could not decide on (a `tenant(req)` that returned no string, a
 * `cost(req)` above the limit, `app.use(rateLimit)` without the call): the server's fault, so a 500. `code` is
 * the error's stable code; the full message goes to the log, not to the client.
 */
export function requestErrorBody(detail: string, code?: string): ResponseBody {
  const problem = {
    type: 'about:blank',
    title: 'Internal Server Error',
    status: 500,
    detail,
    ...(code !== undefined && { code }),
  }
  return { contentType: 'application/problem+json', body: JSON.stringify(problem) }
}
