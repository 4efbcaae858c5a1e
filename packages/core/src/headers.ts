import type { Decision } from './decision.js'

/** Which RateLimit header fields to send: an IETF draft's, or none. */
export type HeaderStandard = 'draft-6' | 'draft-7' | 'draft-8'

export interface HeaderOptions {
  readonly standard: HeaderStandard | false
  /** Also send X-RateLimit-Limit, -Remaining and -Reset (epoch seconds). */
  readonly legacy: boolean
  /** Window length in ms of each policy, by name, for the policy fields. */
  readonly windows: ReadonlyMap<string, number>
}

const seconds = (ms: number) => Math.ceil(ms / 1000)

/**
 * The response headers for a decision, as a plain record with lower-case names, computed once here so every
 * adapter sends the same bytes. A denial always carries Retry-After: whole seconds, rounded up, so it is never
 * earlier than the limiter allows. An 'open' decision (failing open unlimited) gets no numbers it does not have.
 */
export function rateLimitHeaders(decision: Decision, options: HeaderOptions): Record<string, string> {
  const headers: Record<string, string> = {}
  if (!decision.allowed) headers['retry-after'] = String(Math.max(1, seconds(decision.retryAfterMs)))
  if (decision.source === 'open') return headers

  const all = decision.policies ?? [decision]
  // Seconds until the decision changes for the client: its wait when denied, the window's reset when admitted.
  const reset = (d: Decision) => seconds(d.allowed ? d.resetMs : d.retryAfterMs)
  const windowOf = (d: Decision) => seconds(options.windows.get(d.policy) ?? 0)

  switch (options.standard) {
    case 'draft-6':
      headers['ratelimit-limit'] = String(decision.limit)
      headers['ratelimit-remaining'] = String(decision.remaining)
      headers['ratelimit-reset'] = String(reset(decision))
      headers['ratelimit-policy'] = all.map((d) => `${d.limit};w=${windowOf(d)}`).join(', ')
      break
    case 'draft-7':
      headers.ratelimit = `limit=${decision.limit}, remaining=${decision.remaining}, reset=${reset(decision)}`
      headers['ratelimit-policy'] = all.map((d) => `${d.limit};w=${windowOf(d)}`).join(', ')
      break
    case 'draft-8':
      // Structured-field lists; policy names are tokens of [A-Za-z0-9._-], safe inside sf-strings.
      headers['ratelimit-policy'] = all.map((d) => `"${d.policy}";q=${d.limit};w=${windowOf(d)}`).join(', ')
      headers.ratelimit = all.map((d) => `"${d.policy}";r=${d.remaining};t=${reset(d)}`).join(', ')
      break
    case false:
      break
  }
  if (options.legacy) {
    headers['x-ratelimit-limit'] = String(decision.limit)
    headers['x-ratelimit-remaining'] = String(decision.remaining)
    headers['x-ratelimit-reset'] = String(Math.ceil((Date.now() + decision.resetMs) / 1000))
  }
  return headers
}
