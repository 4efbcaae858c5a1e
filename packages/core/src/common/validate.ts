import { describe, OptionError } from './errors.js'

/**
 * Option names users of other rate limiters type by habit (express-rate-limit, @fastify/rate-limit,
 * rate-limiter-flexible, koa-ratelimit), each with the hint an unknown-option error gives: ours, with the value
 * in our units. A hint is given where the option it names is accepted (the adapters take `tenant`,
 * `createRateLimiter` does not); elsewhere the error lists the accepted options.
 */
const FAMILIAR: Readonly<Record<string, (value: unknown, accepted: readonly string[]) => string | undefined>> = {
  // express-rate-limit: milliseconds.
  windowMs: (value, accepted) => fromMilliseconds('windowMs', value, 'window', accepted),
  // @fastify/rate-limit: milliseconds, or a string such as '1 minute'.
  timeWindow: (value, accepted) => fromMilliseconds('timeWindow', value, 'window', accepted),
  interval: (value, accepted) => fromMilliseconds('interval', value, 'window', accepted),
  // rate-limiter-flexible: seconds; koa-ratelimit: milliseconds (its values are in the thousands).
  duration: (value, accepted) => {
    if (!accepted.includes('window')) return undefined
    if (!isCount(value)) return ours('duration', 'window', "a duration such as `window: '60s'`")
    const seconds = `\`duration: ${value}\` (seconds): ${CALLS} \`window\`: \`window: '${value}s'\``
    return value < 1_000 ? seconds : `${seconds}, or for koa-ratelimit's milliseconds \`window: '${msText(value)}'\``
  },
  blockDuration: (value, accepted) => {
    if (!accepted.includes('blockFor')) return undefined
    if (!isCount(value)) return ours('blockDuration', 'blockFor', "a duration such as `blockFor: '5m'`")
    return `\`blockDuration: ${value}\` (seconds): ${CALLS} \`blockFor\`: \`blockFor: '${value}s'\``
  },
  max: (value, accepted) => limitHint('max', value, accepted),
  points: (value, accepted) => limitHint('points', value, accepted),
  keyGenerator: (_value, accepted) => tenantHint('keyGenerator', accepted),
  id: (_value, accepted) => tenantHint('id', accepted),
  identifier: (value, accepted) =>
    accepted.includes('name')
      ? `${CALLS} \`name\`: \`name: ${typeof value === 'string' ? literal(value) : "'api'"}\` (in the keys and the RateLimit-Policy header)`
      : undefined,
  handler: (_value, accepted) =>
    accepted.includes('message') && accepted.includes('onLimited')
      ? `${CALLS} \`message\` (the denial's body: text, JSON, or \`message: (req, decision) => body\`, with \`statusCode\`) and \`onLimited: (req, decision) => …\` (called on every denial)`
      : undefined,
  errorResponseBuilder: (_value, accepted) =>
    accepted.includes('message')
      ? `${CALLS} \`message\`: \`message: (req, decision) => body\`, with \`statusCode\` for the status`
      : undefined,
  errorMessage: (value, accepted) =>
    accepted.includes('message')
      ? `${CALLS} \`message\`: \`message: ${typeof value === 'string' ? literal(value) : 'body'}\``
      : undefined,
  onLimitReached: (_value, accepted) => onLimitedHint(accepted),
  onExceeded: (_value, accepted) => onLimitedHint(accepted),
  standardHeaders: (value, accepted) => {
    if (!accepted.includes('headers')) return undefined
    if (value === false) return `${CALLS} \`headers\`: \`headers: false\``
    if (typeof value === 'string' && /^draft-[678]$/.test(value)) return `${CALLS} \`headers\`: \`headers: '${value}'\``
    return `${CALLS} \`headers\`: \`headers: 'draft-8'\` (the default), \`'draft-7'\` or \`'draft-6'\``
  },
  enableDraftSpec: (value, accepted) =>
    accepted.includes('headers')
      ? value === false
        ? 'fleetlimit sends X-RateLimit-* with `legacyHeaders: true` (and no RateLimit fields with `headers: false`)'
        : `${CALLS} \`headers\`: \`headers: 'draft-6'\` sends RateLimit-Limit, -Remaining and -Reset (the default is 'draft-8')`
      : undefined,
  addHeaders: (_value, accepted) => headerFieldsHint(accepted),
  addHeadersOnExceeding: (_value, accepted) => headerFieldsHint(accepted),
  disableHeader: (_value, accepted) =>
    accepted.includes('headers') ? `${CALLS} \`headers\`: \`headers: false\`` : undefined,
  allowList: (_value, accepted) => skipHint(accepted),
  whitelist: (_value, accepted) => skipHint(accepted),
  skipOnError: (value, accepted) => storeErrorHint(value, accepted),
  passOnStoreError: (value, accepted) => storeErrorHint(value, accepted),
  insuranceLimiter: (_value, accepted) =>
    accepted.includes('fallback')
      ? `${CALLS} \`fallback\`: \`onStoreError: 'fail-open', fallback: { limit: n }\`, a per-process limit while the store fails`
      : undefined,
  ban: (_value, accepted) =>
    accepted.includes('blockFor')
      ? "fleetlimit has no ban count; the nearest is `blockFor`: once a tenant is denied, deny it for that long (`blockFor: '10m'`)"
      : undefined,
  storeClient: (_value, accepted) => storeHint(accepted),
  redis: (_value, accepted) => storeHint(accepted),
  db: (_value, accepted) => storeHint(accepted),
  client: (_value, accepted) => storeHint(accepted),
  keyPrefix: (_value, accepted) => prefixHint(accepted),
  nameSpace: (_value, accepted) => prefixHint(accepted),
  timeout: (value, accepted) =>
    accepted.includes('timeoutMs')
      ? `${CALLS} \`timeoutMs\` (milliseconds)${isCount(value) ? `: \`timeoutMs: ${value}\`` : ''}`
      : accepted.includes('maxWaitMs')
        ? `${CALLS} \`maxWaitMs\` (milliseconds)${isCount(value) ? `: \`maxWaitMs: ${value}\`` : ''}`
        : undefined,
  requestPropertyName: (_value, accepted) =>
    accepted.includes('tenant')
      ? 'fleetlimit puts the decision at `req.rateLimit` (Express), `ctx.state.rateLimit` (Koa) and `request.rateLimit` (Fastify), under no other name'
      : undefined,
  global: (_value, accepted) =>
    accepted.includes('policy')
      ? 'fleetlimit has no `global`: registered without limit, window, policy or policies, the plugin limits only the routes with a `config.rateLimit`'
      : undefined,
  inMemoryBlockOnConsumed: (_value, accepted) =>
    accepted.includes('local')
      ? "fleetlimit's local deny cache does this, on by default (the `local` option)"
      : undefined,
  execEvenly: () => 'fleetlimit spreads calls with `limiter.acquire(key)`, which waits for room instead of denying',
  validate: () => 'fleetlimit validates every option at construction, always: there is nothing to turn on or off',
}

const CALLS = 'fleetlimit calls it'

/** The hint that only names our option: for a value whose units we cannot tell. */
const ours = (name: string, option: string, example: string) => `\`${name}\`: ${CALLS} \`${option}\`, ${example}`

/** A positive whole number: a count or an amount of time in the peer's units. */
const isCount = (value: unknown): value is number =>
  typeof value === 'number' && Number.isInteger(value) && value > 0 && value <= Number.MAX_SAFE_INTEGER

const literal = (value: string) => `'${value.length > 40 ? `${value.slice(0, 40)}…` : value}'`.replace(/\n/g, ' ')

const UNITS: readonly [string, number][] = [
  ['d', 86_400_000],
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1_000],
]

/** Milliseconds as our duration string in the largest unit that says it exactly: 60000 is '1m', 1500 '1500ms'. */
export function msText(ms: number): string {
  for (const [unit, size] of UNITS) if (ms % size === 0) return `${ms / size}${unit}`
  return `${ms}ms`
}

/** The milliseconds of a duration as the `ms` package (which @fastify/rate-limit uses) reads it: '1 minute', '10s', '500'. */
const PEER_UNIT_MS: Readonly<Record<string, number>> = {
  ms: 1,
  msec: 1,
  msecs: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1_000,
  sec: 1_000,
  secs: 1_000,
  second: 1_000,
  seconds: 1_000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hr: 3_600_000,
  hrs: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
}
function peerMilliseconds(value: unknown): number | undefined {
  if (isCount(value)) return value
  if (typeof value !== 'string') return undefined
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(value)
  const unit = PEER_UNIT_MS[(match?.[2] || 'ms').toLowerCase()]
  if (!match || unit === undefined) return undefined
  const ms = Number(match[1]) * unit
  return Number.isInteger(ms) && ms > 0 ? ms : undefined
}

/** A peer's window in milliseconds (a number, or for @fastify/rate-limit a string such as '1 minute'). */
function fromMilliseconds(name: string, value: unknown, option: string, accepted: readonly string[]) {
  if (!accepted.includes(option)) return undefined
  const ms = peerMilliseconds(value)
  if (ms === undefined) return ours(name, option, `a duration such as \`${option}: '1m'\` (a number is milliseconds)`)
  const shown = typeof value === 'string' ? literal(value) : String(value)
  const unit = typeof value === 'number' ? ' (milliseconds)' : ''
  return `\`${name}: ${shown}\`${unit}: ${CALLS} \`${option}\`: \`${option}: ${ms}\` or \`${option}: '${msText(ms)}'\``
}

function limitHint(name: string, value: unknown, accepted: readonly string[]) {
  if (!accepted.includes('limit')) return undefined
  if (isCount(value)) return `\`${name}: ${value}\`: ${CALLS} \`limit\`: \`limit: ${value}\``
  if (typeof value === 'function') {
    return accepted.includes('tenant')
      ? `\`${name}(req)\`: ${CALLS} \`limit\`: \`limit: (req) => …\`, this request's limit`
      : `\`${name}\`: ${CALLS} \`limit\`: a whole number here; a call's own limit is \`consume(key, { limit })\``
  }
  return `${CALLS} \`limit\``
}

const tenantHint = (name: string, accepted: readonly string[]) =>
  accepted.includes('tenant')
    ? `\`${name}(req)\`: ${CALLS} \`tenant\`: \`tenant: (req) => …\`, returning the string that is limited (default: the client IP)`
    : accepted.includes('limit')
      ? `fleetlimit takes the key on each call: \`limiter.consume(key)\``
      : undefined

const onLimitedHint = (accepted: readonly string[]) =>
  accepted.includes('onLimited') ? `${CALLS} \`onLimited\`: \`onLimited: (req, decision) => …\`` : undefined

const headerFieldsHint = (accepted: readonly string[]) =>
  accepted.includes('headers')
    ? "fleetlimit picks the header fields by standard: `headers: 'draft-8'` (the default), `'draft-7'`, `'draft-6'` or `false`, and `legacyHeaders: true` for X-RateLimit-*"
    : undefined

const skipHint = (accepted: readonly string[]) =>
  accepted.includes('skip') ? `${CALLS} \`skip\`: \`skip: (req) => allowed.includes(req.ip)\`` : undefined

const storeErrorHint = (value: unknown, accepted: readonly string[]) =>
  accepted.includes('onStoreError')
    ? value === false
      ? `${CALLS} \`onStoreError\`: \`onStoreError: 'fail-closed'\` (the default)`
      : `${CALLS} \`onStoreError\`: \`onStoreError: 'fail-open'\``
    : undefined

const storeHint = (accepted: readonly string[]) =>
  accepted.includes('store') ? `${CALLS} \`store\`: \`store: redisStore(client)\`` : undefined

const prefixHint = (accepted: readonly string[]) =>
  accepted.includes('prefix')
    ? `${CALLS} \`prefix\``
    : accepted.includes('store')
      ? "the key prefix is the store's: `store: redisStore(client, { prefix: 'myapp' })`"
      : undefined

/** Throws when `options` is not a plain object or holds a name outside `accepted`, so a typo is never ignored. */
export function checkOptionNames(
  options: unknown,
  where: string,
  accepted: readonly string[],
): Record<string, unknown> {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new OptionError(where, options, 'an options object')
  }
  for (const name of Object.keys(options)) {
    if (accepted.includes(name)) continue
    const value = (options as Record<string, unknown>)[name]
    const hint = Object.hasOwn(FAMILIAR, name) ? FAMILIAR[name]?.(value, accepted) : undefined
    throw new OptionError(`${where}.${name}`, value, hint ?? `accepted options are ${accepted.join(', ')}`, true)
  }
  return options as Record<string, unknown>
}

/** An object literal (or one made with Object.create(null)): not a Map, an array or a class instance. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false
  const prototype = Object.getPrototypeOf(value)
  return prototype === Object.prototype || prototype === null
}

/** A whole number in [min, max], or an OptionError naming `option`. */
export function checkInteger(value: unknown, option: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new OptionError(option, value, `a whole number from ${min} to ${max}`)
  }
  return value
}

/** One of the listed strings, or an OptionError naming `option`. */
export function checkOneOf<T extends string>(value: unknown, option: string, accepted: readonly T[]): T {
  if (typeof value !== 'string' || !accepted.includes(value as T)) {
    throw new OptionError(option, value, `one of ${accepted.map((a) => describe(a)).join(', ')}`)
  }
  return value as T
}

/** Every option of an options type, as a record: a new option that is not named here fails to compile. */
export type OptionNames<T> = { readonly [K in keyof Required<T>]: true }

/** The accepted names of an options type, from its record. */
export function optionNames<T>(names: OptionNames<T>): readonly (keyof T & string)[] {
  return Object.keys(names) as (keyof T & string)[]
}

/** A function, or undefined; else an OptionError naming `option`. */
export function optionalFunction<F>(value: F | undefined, option: string): F | undefined {
  if (value !== undefined && typeof value !== 'function') throw new OptionError(option, value, 'a function')
  return value
}

/** true or false, or an OptionError naming `option`. */
export function checkBoolean(value: unknown, option: string): boolean {
  if (typeof value !== 'boolean') throw new OptionError(option, value, 'true or false')
  return value
}
