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
/** A wait as Retry-After sends it: whole seconds, rounded up and at least 1, so never earlier than allowed. */
export const retryAfterSeconds = (ms: number) => Math.max(1, seconds(ms))
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
  if (!decision.allowed) headers['retry-after'] = String(retryAfterSeconds(decision.retryAfterMs))
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

/** The fields one value of which is one limiter's: limit, remaining and reset, kept together. */
const TRIPLES = [
  ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'],
  ['x-ratelimit-limit', 'x-ratelimit-remaining', 'x-ratelimit-reset'],
] as const

/** A header value as a framework reports it (a string, a number, an array of lines, or nothing), as one string. */
function headerText(value: unknown): string {
  if (typeof value === 'string') return value
  if (typeof value === 'number') return String(value)
  if (Array.isArray(value)) return value.join(', ')
  return ''
}

/** draft-8's fields are lists of named items (`"api";r=9`); draft-6's and draft-7's are not. */
const named = (value: string) => value.startsWith('"')
const draft7Remaining = (value: string) => Number(/(?:^|,\s*)remaining=(\d+)/.exec(value)?.[1] ?? Number.NaN)

/**
 * This limiter's headers, for a response that may carry another limiter's already (stacked limiters: app-wide,
 * then per route), so that the response shows every policy that applied. List fields (draft-8's RateLimit and
 * RateLimit-Policy, draft-6's and draft-7's RateLimit-Policy) get this limiter's items after those there. Fields
 * that hold one limit (draft-6's RateLimit-Limit, -Remaining and -Reset, draft-7's RateLimit, X-RateLimit-*)
 * keep the binding limiter's, as one limiter's several policies do: this one's if it denies, else the one with
 * the fewest units left (the first on a tie). `current(name)` reads what the response holds.
 */
export function stackHeaders(
  headers: Readonly<Record<string, string>>,
  current: (name: string) => unknown,
): Readonly<Record<string, string>> {
  let stacked: Record<string, string> | undefined
  const set = (name: string, value: string) => {
    stacked ??= { ...headers }
    stacked[name] = value
  }
  const denies = headers['retry-after'] !== undefined
  for (const name of ['ratelimit-policy', 'ratelimit']) {
    const value = headers[name]
    if (value === undefined) continue
    const before = headerText(current(name))
    if (before === '') continue
    if (named(value) || name === 'ratelimit-policy') {
      // Items of another format (a limiter with another `headers` standard) are not mixed in.
      if (named(before) === named(value)) set(name, `${before}, ${value}`)
    } else if (!denies && draft7Remaining(before) <= draft7Remaining(value)) set(name, before)
  }
  if (denies) return stacked ?? headers
  for (const triple of TRIPLES) {
    if (headers[triple[1]] === undefined) continue
    const before = triple.map((name) => headerText(current(name)))
    if (before.some((value) => value === '') || !(Number(before[1]) <= Number(headers[triple[1]]))) continue
    for (const [i, name] of triple.entries()) set(name, before[i] as string)
  }
  return stacked ?? headers
}
