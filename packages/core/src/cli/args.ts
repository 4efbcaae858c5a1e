import { parseArgs } from 'node:util'
import { parseDuration } from '../common/duration.js'
import { isFleetlimitError } from '../common/errors.js'
import { MAX_HOLD_MS } from '../limiter/policy.js'
import { CliError } from './cli-error.js'

export const COMMANDS = ['peek', 'reset', 'pause', 'resume', 'keys'] as const
export type CommandName = (typeof COMMANDS)[number]

/** Where to connect: one server's URL, or a Cluster's seed nodes (credentials from the first that has some). */
export type Target = { readonly url: string } | { readonly seeds: readonly string[] }

/** The policy a key belongs to, as the options a limiter takes (validated by definePolicy). */
export interface PolicyArgs {
  readonly name?: string
  readonly window?: string
  readonly limit?: number
  readonly algorithm?: string
  readonly buckets?: number
  /** An in-flight policy's concurrency; it or slotTtl names an in-flight policy. */
  readonly concurrency?: number
  readonly slotTtl?: string
  /** A calendar policy's period ('day', 'week', 'month'); it or timeZone names a calendar policy. */
  readonly period?: string
  readonly timeZone?: string
}

export interface Command {
  readonly name: CommandName
  readonly target: Target
  readonly prefix: string
  readonly json: boolean
  readonly policy: PolicyArgs
  /** The tenant (peek, reset, pause, resume). */
  readonly tenant?: string
  readonly route?: string
  /** peek of a calendar policy: the tenant's billing day, for the period its count would start in. */
  readonly anchor?: number
  /** pause: ms. */
  readonly forMs?: number
  /** Act on a policy no live key has. */
  readonly force: boolean
  /** keys: the most keys listed. */
  readonly max: number
}

export const USAGE = `Usage: fleetlimit <command> [tenant] [options]

Commands:
  peek <tenant>     a tenant's usage on a policy, and the Redis key read
  reset <tenant>    forget the tenant's window (or free its slots), in every process (fleet-wide)
  pause <tenant>    deny every call of the tenant, in every process, --for a duration
  resume <tenant>   end a pause or block (its window is forgotten too: see docs/operations.md)
  keys              the live keys of the prefix with their usage (SCAN, every master on a Cluster)

Options:
  --redis <url>          redis:// or rediss:// URL (default: $REDIS_URL, else redis://127.0.0.1:6379)
  --cluster <host:port>  a Redis Cluster seed node instead of --redis; repeat for more (a URL for credentials)
  --prefix <prefix>      the store's key prefix (default: fleetlimit)
  --policy <name>        the policy's name; --window <duration> its window (both name the key)
  --limit <n>            the policy's limit (peek shows what remains of it)
  --algorithm bucketed   with --buckets <n>, for a bucketed policy
  --slot-ttl <duration>  an in-flight policy's slotTtlMs (default 1m), in place of --window: names its slot key
  --concurrency <n>      an in-flight policy's concurrency (peek shows the slots free)
  --period <unit>        a calendar policy's day, week or month, in place of --window: names its key
  --time-zone <zone>     a calendar policy's IANA time zone (default UTC): names its key too
  --anchor <n>           peek: the tenant's billing day (1-31 for a month, 1-7 from Monday for a week)
  --route <route>        the key's route: '*' for an app-level middleware, 'GET /users/:id' for a route's
  --for <duration>       pause: how long, such as 10m
  --force                act on a policy that has no live key
  --max <n>              keys: list at most this many (default 1000)
  --json                 one JSON object on stdout
  --help                 this text

Examples:
  fleetlimit keys --redis redis://:password@10.0.0.5:6379
  fleetlimit peek 203.0.113.7 --policy api --window 1m --route '*' --limit 100
  fleetlimit reset acme --policy search --window 10s --route 'GET /search'
  fleetlimit pause acme --policy api --window 1m --route '*' --for 10m
  fleetlimit reset acme --policy parallel --slot-ttl 30s
  fleetlimit peek acme --policy plan --period month --time-zone Europe/Berlin --anchor 15 --limit 10000

Exit codes: 0 done, 1 Redis failed (unreachable, credentials refused), 2 a mistake in the command.
More: https://github.com/fleetlimit/fleetlimit/blob/main/docs/operations.md`

const OPTIONS = {
  redis: { type: 'string' },
  cluster: { type: 'string', multiple: true },
  prefix: { type: 'string' },
  policy: { type: 'string' },
  window: { type: 'string' },
  limit: { type: 'string' },
  algorithm: { type: 'string' },
  buckets: { type: 'string' },
  concurrency: { type: 'string' },
  'slot-ttl': { type: 'string' },
  period: { type: 'string' },
  'time-zone': { type: 'string' },
  anchor: { type: 'string' },
  route: { type: 'string' },
  for: { type: 'string' },
  force: { type: 'boolean' },
  max: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean' },
} as const
type OptionName = keyof typeof OPTIONS

/**
 * The command argv names; 'help' for --help, 'usage' for no command at all (a mistake: the help goes to stderr);
 * a usage error as a CliError with exit code 2.
 */
export function parseCommand(argv: readonly string[], env: NodeJS.ProcessEnv): Command | 'help' | 'usage' {
  const { values, positionals, tokens } = parse(argv)
  if (values.help) return 'help'
  checkOnce(tokens)
  if (positionals.length === 0) return 'usage'
  const [name, ...rest] = positionals
  if (!COMMANDS.includes(name as CommandName)) {
    const near = nearest(name as string, COMMANDS, COMMAND_SYNONYMS)
    throw usage(
      `unknown command ${JSON.stringify(name)}: ${near === undefined ? `one of ${COMMANDS.join(', ')}` : `did you mean ${near}?`}`,
    )
  }
  const command = name as CommandName
  const takesTenant = command !== 'keys'
  if (rest.length > (takesTenant ? 1 : 0)) throw usage(`unexpected argument ${JSON.stringify(rest.at(-1))}`)
  const tenant = rest[0]
  if (takesTenant && tenant === undefined) throw usage(`${command} needs a tenant: fleetlimit ${command} <tenant>`)
  // Most often an unset shell variable: fleetlimit reset "$TENANT".
  if (tenant === '') throw usage(`${command} got an empty tenant`)
  if (values.redis !== undefined && values.cluster !== undefined) throw usage('give --redis or --cluster, not both')
  const target: Target = values.cluster
    ? { seeds: values.cluster }
    : { url: values.redis ?? env.REDIS_URL ?? 'redis://127.0.0.1:6379' }
  if (command === 'pause' && values.for === undefined) throw usage('pause needs --for <duration>, such as --for 10m')
  if (command !== 'pause' && values.for !== undefined) throw usage('--for is for pause only')
  if (command !== 'peek' && values.anchor !== undefined) throw usage('--anchor is for peek only')
  if (!takesTenant && values.route !== undefined) throw usage('--route names one key: for peek, reset, pause, resume')
  return {
    name: command,
    target,
    prefix: values.prefix ?? 'fleetlimit',
    json: values.json === true,
    policy: {
      ...(values.policy !== undefined && { name: values.policy }),
      ...(values.window !== undefined && { window: values.window }),
      ...(values.limit !== undefined && { limit: wholeNumber(values.limit, '--limit') }),
      ...(values.algorithm !== undefined && { algorithm: values.algorithm }),
      ...(values.buckets !== undefined && { buckets: wholeNumber(values.buckets, '--buckets') }),
      ...(values.concurrency !== undefined && { concurrency: wholeNumber(values.concurrency, '--concurrency') }),
      ...(values['slot-ttl'] !== undefined && { slotTtl: values['slot-ttl'] }),
      ...(values.period !== undefined && { period: values.period }),
      ...(values['time-zone'] !== undefined && { timeZone: values['time-zone'] }),
    },
    ...(tenant !== undefined && { tenant }),
    ...(values.route !== undefined && { route: values.route }),
    ...(values.anchor !== undefined && { anchor: wholeNumber(values.anchor, '--anchor') }),
    ...(values.for !== undefined && { forMs: duration(values.for, '--for') }),
    force: values.force === true,
    max: values.max === undefined ? 1000 : wholeNumber(values.max, '--max'),
  }
}

function parse(argv: readonly string[]) {
  try {
    return parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true, tokens: true })
  } catch (error) {
    throw usage(parseFailure(error as Error & { code?: string }, argv))
  }
}

/** node:util's parse errors in the operator's terms: the flag as typed, and the nearest real one. */
function parseFailure(error: Error & { code?: string }, argv: readonly string[]): string {
  if (error.code !== 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return error.message
  const typed = argv.find((arg) => arg.startsWith('-') && error.message.includes(`'${arg.split('=')[0]}'`))
  const flag = typed?.split('=')[0] ?? error.message
  const name = flag.replace(/^-+/, '')
  if (name === 'tenant') return 'unknown option --tenant: the tenant comes after the command, fleetlimit peek <tenant>'
  const near = nearest(name, Object.keys(OPTIONS))
  return `unknown option ${flag}${near === undefined ? '' : `: did you mean --${near}?`}`
}

/** What an operator means by a command that does not exist, where the nearest spelling is not it. */
const COMMAND_SYNONYMS: Readonly<Record<string, CommandName>> = {
  unpause: 'resume',
  unblock: 'resume',
  list: 'keys',
  ls: 'keys',
}

/**
 * The name the operator most likely meant: a synonym's command, else the first name within a typo's reach (one
 * edit for a short word, two for a longer one); undefined when none is near.
 */
function nearest(typed: string, names: readonly string[], synonyms: Readonly<Record<string, string>> = {}) {
  if (Object.hasOwn(synonyms, typed)) return synonyms[typed]
  return names.find((name) => editDistance(typed, name) <= (typed.length < 4 ? 1 : 2))
}

/** Refuses an option given more than once (the last would silently win), unless it is one that repeats. */
function checkOnce(tokens: readonly { kind: string; name?: string; value?: string | undefined }[]): void {
  const given = new Map<string, (string | undefined)[]>()
  for (const token of tokens) {
    if (token.kind !== 'option' || token.name === undefined || 'multiple' in OPTIONS[token.name as OptionName]) continue
    given.set(token.name, [...(given.get(token.name) ?? []), token.value])
  }
  for (const [name, values] of given) {
    if (values.length < 2) continue
    const times = values.length === 2 ? 'twice' : `${values.length} times`
    const shown = values.every((value) => value === undefined)
      ? ''
      : ` (${values.map((value) => JSON.stringify(value)).join(', then ')})`
    throw usage(`--${name} given ${times}${shown}: give it once`)
  }
}

/** Levenshtein distance, for short flag names. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1)
      current.push(Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, substitution))
    }
    previous = current
  }
  return previous[b.length] as number
}

function usage(message: string): CliError {
  return new CliError(`${message} (fleetlimit --help)`, 2)
}

function wholeNumber(text: string, option: string): number {
  if (!/^[1-9]\d{0,9}$/.test(text)) throw usage(`${option} ${JSON.stringify(text)}: a positive whole number`)
  return Number(text)
}

/** A duration as the limiter takes it: '10m', '90s', or ms. */
function duration(text: string, option: string): number {
  try {
    return parseDuration(/^\d+$/.test(text) ? Number(text) : text, option, { max: MAX_HOLD_MS })
  } catch (error) {
    if (isFleetlimitError(error)) throw new CliError(error.message, 2)
    throw error
  }
}
