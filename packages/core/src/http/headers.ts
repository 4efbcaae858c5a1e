import type { Decision } from '../limiter/decision.js'

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
/** Seconds until the decision changes for the client: its wait when denied, the window's reset when admitted. */
const resetOf = (d: Decision) => seconds(d.allowed ? d.resetMs : d.retryAfterMs)
const windowOf = (d: Decision, options: HeaderOptions) => seconds(options.windows.get(d.policy) ?? 0)
const policyField = (d: Decision, options: HeaderOptions) => `${d.limit};w=${windowOf(d, options)}`
const namedPolicyField = (d: Decision, options: HeaderOptions) => `"${d.policy}";q=${d.limit};w=${windowOf(d, options)}`
const namedRateLimitField = (d: Decision) => `"${d.policy}";r=${d.remaining};t=${resetOf(d)}`

/** One field per policy, comma-separated (no array for the usual single policy). */
function list(
  all: readonly Decision[],
  options: HeaderOptions,
  field: (d: Decision, options: HeaderOptions) => string,
) {
  let value = field(all[0] as Decision, options)
  for (let i = 1; i < all.length; i++) value += `, ${field(all[i] as Decision, options)}`
  return value
}

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
  switch (options.standard) {
    case 'draft-6':
      headers['ratelimit-limit'] = String(decision.limit)
      headers['ratelimit-remaining'] = String(decision.remaining)
      headers['ratelimit-reset'] = String(resetOf(decision))
      headers['ratelimit-policy'] = list(all, options, policyField)
      break
    case 'draft-7':
      headers.ratelimit = `limit=${decision.limit}, remaining=${decision.remaining}, reset=${resetOf(decision)}`
      headers['ratelimit-policy'] = list(all, options, policyField)
      break
    case 'draft-8':
      // Structured-field lists; policy names are tokens of [A-Za-z0-9._-], safe inside sf-strings.
      headers['ratelimit-policy'] = list(all, options, namedPolicyField)
      headers.ratelimit = list(all, options, namedRateLimitField)
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
