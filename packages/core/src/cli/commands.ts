// The commands of the `fleetlimit` command line (peek, reset, pause, resume, keys): each reads, acts and says what it did.
import { buildKey, type KeyInput } from '../limiter/keys.js'
import { createRateLimiter } from '../limiter/limiter.js'
import { policyKeyName } from '../limiter/policy.js'
import { redisStore } from '../store/redis-store.js'
import type { Command } from './args.js'
import { CliError } from './cli-error.js'
import { asCliError, calendarOf, fieldsOf, type PolicyFields, policyOf } from './command-policy.js'
import type { Connected } from './connect.js'
import { isEmpty, nextOfPeriod, periodUsageOf, type Usage, usageOf, windowOf } from './key-usage.js'
import { byKey, checkKnown, otherKeys } from './live-keys.js'
import {
  columns,
  describePolicy,
  learnedLine,
  otherRoute,
  periodLines,
  policyJson,
  routeFlag,
  seconds,
  slots,
  table,
  units,
  usageJson,
  usageLines,
} from './output-format.js'
import { createReadPeriod, createReadWindow, type ReadWindow, readLearned } from './read-window.js'
import { scanKeys } from './scan.js'
import { globLiteral, parseStoredKey, type StoredKey } from './stored-keys.js'

/** What a command printed: lines for a person, one object for a machine. */
export interface Output {
  readonly text: string
  readonly json: Record<string, unknown>
}

const SILENT = { warn() {}, info() {} }
/** An operator's call may wait longer for a busy server than a request would. */
const TIMEOUT_MS = 5_000

export async function runCommand(command: Command, connected: Connected): Promise<Output> {
  const store = asCliError(() => redisStore(connected.client, { prefix: command.prefix }))
  // Reads never write (a read-only replica answers them); only reset, pause and resume write, through a limiter.
  const read = createReadWindow(connected.client, command.prefix)
  const readPeriod = createReadPeriod(connected.client, command.prefix)
  if (command.name === 'keys') {
    return listKeys(command, connected, (stored, limit) => keyUsage(read, readPeriod, stored, limit))
  }
  const policy = policyOf(command)
  const fields = fieldsOf(policy)
  const calendar = calendarOf(command, fields)
  if (command.name === 'pause' && fields.inFlight) {
    throw new CliError(
      'pause holds a rate policy’s window; an in-flight policy has slots, not a window to hold (reset frees its ' +
        'slots) (fleetlimit --help)',
      2,
    )
  }
  if (!command.force) await checkKnown(policy, command.prefix, connected)
  const writer = () => createRateLimiter({ store, ...policy, timeoutMs: TIMEOUT_MS, local: false, logger: SILENT })
  const input: KeyInput =
    command.route === undefined
      ? (command.tenant as string)
      : { tenant: command.tenant as string, route: command.route }
  const key = buildKey(policyKeyName(policy), input)
  const redisKey = `${command.prefix}:${key}`
  const window = windowOf(key, fields)
  // A calendar key is read with GET and TIME: its count, period and hold, and the server's now to judge them by.
  const readUsage = async () => {
    if (calendar === undefined) return { usage: await usageOf(read, window), nowUs: 0 }
    const periodRead = await readPeriod(key)
    return { usage: periodUsageOf(periodRead, calendar), nowUs: periodRead.nowUs }
  }
  const { usage, nowUs } = await readUsage()
  const limit = command.policy.limit ?? command.policy.concurrency
  const subject = {
    key: redisKey,
    policy: policyJson(fields, limit),
    tenant: command.tenant,
    route: command.route ?? null,
  }
  switch (command.name) {
    case 'peek': {
      const next =
        limit === undefined
          ? undefined
          : calendar === undefined
            ? await read({ ...window, limit })
            : nextOfPeriod(usage, limit, nowUs)
      const lines = [
        ['key', redisKey],
        ['policy', describePolicy(fields, limit)],
        ...(calendar === undefined ? usageLines(usage, limit, next) : periodLines(usage, fields, limit, next)),
      ]
      // What limitedFetch learned of the upstream behind this key, which its calls are admitted under (a calendar
      // or in-flight policy learns nothing).
      const learned =
        fields.inFlight || calendar !== undefined
          ? undefined
          : await readLearned(connected.client, command.prefix, key, fields.window, limit)
      if (learned) lines.push(['learned', learnedLine(learned)])
      // An empty key is most often the wrong route: the tenant's live keys of the policy say which to name.
      const empty = isEmpty(usage)
      const others = empty ? await otherKeys(policy, command, connected, redisKey) : []
      if (others.length > 0) lines.push(['live keys', others.map(routeFlag).join('; ')])
      return {
        text: table(lines),
        json: {
          command: 'peek',
          ...subject,
          ...usageJson(usage, fields),
          ...(next && { remaining: next.remaining, allowed: next.allowed, retryAfterMs: next.retryAfterMs }),
          ...(learned && { learned }),
          ...(empty && { otherRoutes: others.map(otherRoute) }),
        },
      }
    }
    case 'reset': {
      await writer().reset(input)
      // Nothing forgotten most often means the wrong route: the customer is still blocked under another key.
      const others = isEmpty(usage) ? await otherKeys(policy, command, connected, redisKey) : []
      const hint =
        others.length > 0 ? `\nthe key was empty; the tenant's live keys: ${others.map(routeFlag).join('; ')}` : ''
      return {
        text: `reset ${redisKey}: ${fields.inFlight ? `${slots(usage.used)} freed` : `${units(usage.used)} forgotten`}; every process asks Redis again${hint}`,
        json: {
          command: 'reset',
          ...subject,
          ...(fields.inFlight ? { freedSlots: usage.used } : { forgottenUnits: usage.used }),
          ...(isEmpty(usage) && { otherRoutes: others.map(otherRoute) }),
        },
      }
    }
    case 'pause': {
      const ms = command.forMs as number
      await writer().pause(input, ms)
      const { usage: after } = await readUsage()
      return {
        text: `paused ${redisKey}: every call denied for ${seconds(after.pausedMs)}, in every process`,
        json: { command: 'pause', ...subject, pausedMs: after.pausedMs },
      }
    }
    case 'resume': {
      if (usage.pausedMs === 0) {
        return {
          text: `not paused: ${redisKey} (nothing changed)`,
          json: { command: 'resume', ...subject, resumed: false },
        }
      }
      // The scripts can extend a hold, never shorten one: ending it forgets the key, its units with it.
      await writer().reset(input)
      return {
        text: `resumed ${redisKey}: the pause (${seconds(usage.pausedMs)} left) ended, and ${units(usage.used)} forgotten`,
        json: { command: 'resume', ...subject, resumed: true, pausedMs: usage.pausedMs, forgottenUnits: usage.used },
      }
    }
  }
}

async function listKeys(
  command: Command,
  connected: Connected,
  usageOfKey: (stored: StoredKey, limit: number | undefined) => Promise<KeyRow>,
): Promise<Output> {
  const { prefix, max } = command
  const { name, window, slotTtl, period } = command.policy
  let pattern = `${globLiteral(prefix)}:*`
  // With a policy named whole, its keys alone are listed: --limit (or --concurrency) is theirs.
  let limit: number | undefined
  if (name !== undefined) {
    const whole = window !== undefined || slotTtl !== undefined || period !== undefined
    pattern = whole
      ? `${globLiteral(prefix)}:${policyKeyName(policyOf(command))}:*`
      : `${globLiteral(prefix)}:${name}~*`
    if (whole) limit = command.policy.limit ?? command.policy.concurrency
  }
  const found = new Map<string, StoredKey>()
  let truncated = false
  for await (const redisKey of scanKeys(connected.scanned(), pattern)) {
    const stored = parseStoredKey(redisKey, prefix)
    if (!stored || found.has(redisKey)) continue
    if (found.size === max) {
      truncated = true
      break
    }
    found.set(redisKey, stored)
  }
  const rows = []
  const keys = [...found.values()].sort(byKey)
  for (let i = 0; i < keys.length; i += 100) {
    rows.push(...(await Promise.all(keys.slice(i, i + 100).map((stored) => usageOfKey(stored, limit)))))
  }
  // A calendar key's period start and reset instant, in its zone, in two columns shown when one is listed.
  const calendars = rows.some((row) => row.periodStart !== undefined)
  const header = ['USED', 'EMPTIES IN', 'PAUSED', ...(calendars ? ['PERIOD START', 'RESETS AT'] : []), 'KEY']
  const lines = rows.map((row) => [
    `${row.nextSlotEndMs === undefined ? String(row.used) : slots(row.used)}${limit === undefined ? '' : ` of ${limit}`}`,
    row.resetMs === 0 ? '-' : seconds(row.resetMs),
    row.pausedMs === 0 ? '-' : seconds(row.pausedMs),
    ...(calendars ? [row.periodStart ?? '-', row.resetAt ?? '-'] : []),
    row.key,
  ])
  const summary = `${rows.length} ${rows.length === 1 ? 'key' : 'keys'} under prefix "${prefix}"${truncated ? ` (the first ${max}: --max for more)` : ''}`
  return {
    text: rows.length === 0 ? summary : `${columns([header, ...lines])}\n${summary}`,
    json: { command: 'keys', prefix, keys: rows, truncated },
  }
}

type KeyRow = Awaited<ReturnType<typeof keyUsage>>

async function keyUsage(
  read: ReadWindow,
  readPeriod: ReturnType<typeof createReadPeriod>,
  stored: StoredKey,
  limit: number | undefined,
) {
  const policy: PolicyFields = stored.policy
  // A key holds no tenant's anchor: a calendar key that counts no current period (held past its end) shows none.
  const usage: Usage =
    policy.period === undefined
      ? await usageOf(read, windowOf(stored.key, policy))
      : periodUsageOf(await readPeriod(stored.key))
  return {
    key: stored.redisKey,
    policy: policyJson(policy, limit),
    tenant: stored.tenant ?? null,
    ...(stored.hasRoute && { route: stored.route ?? null }),
    ...usageJson(usage, policy),
  }
}
