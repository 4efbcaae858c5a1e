// What an upstream's response says of its quota: the IETF RateLimit and RateLimit-Policy fields (draft 8 and
// later: lists of named items with q, w, r, t), draft 6's RateLimit-Limit/-Remaining/-Reset, and the common
// x-ratelimit-limit/-remaining/-reset family with OpenAI's -requests and -tokens variants. Pure: no I/O, no clock
// but the one given. A value that is not what its field allows (too long, negative, NaN, absurd) is left out, never
// thrown on.

/** One quota the upstream described; each part is there only when the headers gave it. */
export interface Quota {
  /** The policy's name (IETF), or 'requests' / 'tokens' (x-ratelimit-*-requests / -tokens). */
  readonly name?: string
  /**
   * What it counts: requests unless the upstream says otherwise (IETF `qu`, 'tokens' for `qu="tokens"`, or the
   * -tokens variant).
   */
  readonly unit: 'requests' | 'tokens' | 'other'
  /** Units allowed per window. */
  readonly limit?: number
  readonly windowMs?: number
  /** Units left now. */
  readonly remaining?: number
  /** Time until the quota refills (ms). */
  readonly resetMs?: number
}

/** Longer field values are ignored: a quota takes a few dozen characters. */
const MAX_FIELD = 1_024
/** The most items read from one list field. */
const MAX_ITEMS = 16
/** Counts beyond this are nonsense, and a window or reset beyond a year too. */
const MAX_COUNT = 1e12
const MAX_MS = 366 * 86_400_000
/** A reset above this many seconds is an epoch time (GitHub's x-ratelimit-reset), not a delay. */
const EPOCH_SECONDS_FROM = 1e9

/** Every quota a response's headers describe, in the order found; empty when they say nothing usable. */
export function readQuotas(headers: Headers, now = Date.now()): Quota[] {
  return [...ietfQuotas(headers), ...familyQuotas(headers, now)]
}

/** IETF draft 8+: RateLimit-Policy items (q, w, qu) joined by name with RateLimit items (r, t). */
function ietfQuotas(headers: Headers): Quota[] {
  const byName = new Map<string, { -readonly [K in keyof Quota]: Quota[K] }>()
  const entry = (name: string) => {
    let quota = byName.get(name)
    if (quota === undefined) {
      quota = { name, unit: 'requests' }
      byName.set(name, quota)
    }
    return quota
  }
  // An item named twice in one field: the first counts, as for a parameter.
  const policies = new Set<string>()
  for (const item of listField(headers.get('ratelimit-policy'))) {
    // Drafts 6 and 7 name no policy: an item's value is its quota (`10;w=60`), of the one unnamed quota.
    const unnamed = !item.params.has('q') && count(item.name) !== undefined
    const name = unnamed ? '' : item.name
    if (policies.has(name)) continue
    policies.add(name)
    const quota = entry(name)
    setIf(quota, 'limit', count(unnamed ? item.name : item.params.get('q')))
    setIf(quota, 'windowMs', seconds(item.params.get('w'), 1))
    const unit = item.params.get('qu')
    if (unit !== undefined && unit !== 'requests') quota.unit = unit === 'tokens' ? 'tokens' : 'other'
  }
  const field = headers.get('ratelimit')
  // Draft 7's RateLimit is a dictionary (limit=, remaining=, reset=), draft 8's a list of named items.
  const draft7 = field !== null && field.length <= MAX_FIELD && /(?:^|[,;]\s*)remaining=/.test(field)
  if (draft7) {
    const params = paramsOf(field.replaceAll(',', ';'))
    const quota = entry('')
    setIf(quota, 'limit', count(params.get('limit')))
    setIf(quota, 'remaining', count(params.get('remaining')))
    setIf(quota, 'resetMs', seconds(params.get('reset'), 0))
  } else {
    const states = new Set<string>()
    for (const item of listField(field)) {
      if (states.has(item.name)) continue
      states.add(item.name)
      const quota = entry(item.name)
      setIf(quota, 'remaining', count(item.params.get('r')))
      setIf(quota, 'resetMs', seconds(item.params.get('t'), 0))
    }
  }
  // Draft 6: one quota in three fields.
  const limit = count(fieldOf(headers, 'ratelimit-limit'))
  const remaining = count(fieldOf(headers, 'ratelimit-remaining'))
  if (limit !== undefined || remaining !== undefined) {
    const quota = entry('')
    setIf(quota, 'limit', limit)
    setIf(quota, 'remaining', remaining)
    setIf(quota, 'resetMs', seconds(fieldOf(headers, 'ratelimit-reset'), 0))
  }
  return [...byName.values()].filter(described)
}

/** x-ratelimit-limit/-remaining/-reset, and its -requests and -tokens variants (OpenAI's). */
function familyQuotas(headers: Headers, now: number): Quota[] {
  const quotas: Quota[] = []
  for (const [suffix, name, unit] of [
    ['', undefined, 'requests'],
    ['-requests', 'requests', 'requests'],
    ['-tokens', 'tokens', 'tokens'],
  ] as const) {
    const quota: { -readonly [K in keyof Quota]: Quota[K] } = { unit }
    if (name !== undefined) quota.name = name
    setIf(quota, 'limit', count(fieldOf(headers, `x-ratelimit-limit${suffix}`)))
    setIf(quota, 'remaining', count(fieldOf(headers, `x-ratelimit-remaining${suffix}`)))
    setIf(quota, 'resetMs', resetOf(fieldOf(headers, `x-ratelimit-reset${suffix}`), now))
    if (described(quota)) quotas.push(quota)
  }
  return quotas
}

const described = (quota: Quota) => quota.limit !== undefined || quota.remaining !== undefined

function setIf<K extends 'limit' | 'windowMs' | 'remaining' | 'resetMs'>(
  quota: { -readonly [P in keyof Quota]: Quota[P] },
  name: K,
  value: number | undefined,
): void {
  if (value !== undefined) quota[name] = value
}

/** A field's value, trimmed; undefined when absent or too long to be a quota's. */
function fieldOf(headers: Headers, name: string): string | undefined {
  const value = headers.get(name)
  return value === null || value.length > MAX_FIELD ? undefined : value.trim()
}

/** A whole count: digits only, at most MAX_COUNT. */
function count(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d{1,13}$/.test(text)) return undefined
  const n = Number(text)
  return n <= MAX_COUNT ? n : undefined
}

/** Seconds (digits, maybe a fraction) as ms, at least `min` seconds and at most a year. */
function seconds(text: string | undefined, min: number): number | undefined {
  if (text === undefined || !/^\d{1,12}(?:\.\d{1,6})?$/.test(text)) return undefined
  const ms = Math.ceil(Number(text) * 1_000)
  return ms >= min * 1_000 && ms <= MAX_MS ? ms : undefined
}

const DURATION =
  /^(?:(\d{1,6}(?:\.\d{1,6})?)h)?(?:(\d{1,6}(?:\.\d{1,6})?)m(?!s))?(?:(\d{1,9}(?:\.\d{1,6})?)s)?(?:(\d{1,9}(?:\.\d{1,6})?)ms)?$/

/**
 * A reset as ms from `now`: a duration (`1m30s`, `6ms`, `0.5s`, `2h0m0s`), seconds (`30`, `1.5`), or an epoch
 * time in seconds (GitHub: `1700000000`) or ms; a time already past is 0.
 */
export function resetOf(text: string | undefined, now: number): number | undefined {
  if (text === undefined || text === '') return undefined
  if (/^\d{1,16}(?:\.\d{1,6})?$/.test(text)) {
    const value = Number(text)
    if (value < EPOCH_SECONDS_FROM) return seconds(text, 0)
    // Epoch ms have 13 digits today, epoch seconds 10.
    const at = value >= EPOCH_SECONDS_FROM * 1_000 ? value : value * 1_000
    const ms = Math.ceil(at - now)
    return ms <= MAX_MS ? Math.max(0, ms) : undefined
  }
  const match = DURATION.exec(text)
  if (!match) return undefined
  const [, h, m, s, ms] = match.map((part) => (part === undefined ? 0 : Number(part))) as number[]
  const total = Math.ceil((h as number) * 3_600_000 + (m as number) * 60_000 + (s as number) * 1_000 + (ms as number))
  return total <= MAX_MS ? total : undefined
}

interface Item {
  readonly name: string
  readonly params: Map<string, string>
}

/**
 * A structured-field list (RFC 9651) of items with parameters, read leniently: `"name";q=10;w=1, "b";q=5`. Only
 * what a quota needs: an item's bare value is its name (a string, a token or a number), a parameter's value its
 * text (quotes removed).
 */
function listField(value: string | null): Item[] {
  if (value === null || value.length > MAX_FIELD) return []
  const items: Item[] = []
  for (const member of splitOutsideQuotes(value, ',').slice(0, MAX_ITEMS)) {
    const [bare = '', ...params] = splitOutsideQuotes(member, ';')
    items.push({ name: unquote(bare.trim()), params: paramsOf(params.join(';')) })
  }
  return items
}

function paramsOf(text: string): Map<string, string> {
  const params = new Map<string, string>()
  for (const part of splitOutsideQuotes(text, ';').slice(0, MAX_ITEMS)) {
    const at = part.indexOf('=')
    const key = (at === -1 ? part : part.slice(0, at)).trim().toLowerCase()
    // A repeated parameter: the first counts (a later one may be forged by a proxy appending).
    if (key !== '' && !params.has(key)) params.set(key, at === -1 ? '?1' : unquote(part.slice(at + 1).trim()))
  }
  return params
}

function splitOutsideQuotes(text: string, separator: string): string[] {
  const parts: string[] = []
  let quoted = false
  let start = 0
  for (let i = 0; i < text.length; i++) {
    const char = text[i]
    if (char === '\\' && quoted) i++
    else if (char === '"') quoted = !quoted
    else if (char === separator && !quoted) {
      parts.push(text.slice(start, i))
      start = i + 1
    }
  }
  parts.push(text.slice(start))
  return parts
}

const unquote = (text: string) =>
  text.length >= 2 && text.startsWith('"') && text.endsWith('"') ? text.slice(1, -1).replace(/\\(.)/g, '$1') : text

/** What a response's quotas ask of a limiter: a lower limit per its window, and a pause while none is left. */
export interface QuotaAdvice {
  /** The lowest quota that bounds the policy, as units per its window (at least 1); undefined when none is given. */
  readonly limit?: number
  /** The longest wait among quotas with nothing left (ms); undefined when every quota has some left. */
  readonly pauseMs?: number
}

/**
 * Reads quotas as a limiter's policy of window `windowMs` can follow them. A quota of another window is scaled to
 * it (10 per minute is 1 per 6 s: floor(10 × 6 / 60)), which keeps the fleet within the quota over the longer of
 * the two windows; a quota whose window the headers do not give is taken as per the policy's window. Only the
 * quotas that `bounds` the policy set its limit (by default the request quotas); any quota with none left pauses
 * (none left is none left).
 */
export function adviceOf(
  quotas: readonly Quota[],
  windowMs: number,
  bounds: (quota: Quota) => boolean = (quota) => quota.unit === 'requests',
): QuotaAdvice {
  let limit: number | undefined
  let pauseMs: number | undefined
  for (const quota of quotas) {
    if (quota.limit !== undefined && bounds(quota)) {
      const scaled = Math.max(1, Math.floor((quota.limit * windowMs) / (quota.windowMs ?? windowMs)))
      limit = Math.min(limit ?? scaled, scaled)
    }
    if (quota.remaining === 0 && quota.resetMs !== undefined) pauseMs = Math.max(pauseMs ?? 0, quota.resetMs)
  }
  return { ...(limit !== undefined && { limit }), ...(pauseMs !== undefined && { pauseMs }) }
}
