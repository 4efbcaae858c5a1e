import { type Calendar, periodStarts } from '../common/calendar.js'
import { StoreError } from '../common/errors.js'
import type { LuaScript } from './script-runner.js'
import { slidingLogScript } from './scripts.generated.js'
import { ReplyError } from './server-failure.js'
import type { WindowResult } from './store.js'

// lua/sliding-log.lua's one argument and its reply, both binary and big-endian (see the script's header). Numbers
// go as doubles: the script reads them with one struct.unpack, where parsing decimal text costs it more than the
// rest of a denial.

/**
 * One key's window in a call: its limit, its length, its block (none when unset), and whether it is a shadow
 * window (which counts only beside other windows). A store's WindowRequest is one.
 */
export interface LogWindow {
  readonly limit: number
  readonly windowMs: number
  readonly blockMs?: number
  readonly shadow?: boolean
}

/** A window of a call with a cost per window ('C', 'P'): its cost, or one slot of an in-flight window. */
export interface CostWindow extends LogWindow {
  readonly cost: number
  readonly slots?: boolean
  /** A calendar period's count: the call names the starts around the caller's now (see the script's Periods). */
  readonly period?: Calendar
  /** A priority class's share window (see the script's Shares): enforced only while its key is held. */
  readonly share?: boolean
}

const CALL = 19 // '>Hc1dd': the call's length in bytes, op, units, deadline
const WINDOW = 25 // '>dddB': limit, window, block, shadow
const COST_WINDOW = 33 // '>ddddB': limit, window, block, units, flags
const PERIOD_STARTS = 32 // '>dddd': after a period window, its four starts
const SHADOW = 1
const SLOTS = 2
const PERIOD = 4
const SHARE = 8
/** A window's length as a release, settle or hold names it: -1 for a calendar period's count. */
export const PERIOD_WINDOW = -1
const DEADLINE_AT = 11
// A call's length is its first two bytes: the script finds the next call of a run by it.
const MAX_CALL = 0xffff

type Op = 'c' | 'p' | 'C' | 'P' | 'l' | 'r' | 's' | 'f' | 'e' | 'z'

function call(op: Op, units: number, size: number): Buffer {
  if (size > MAX_CALL)
    throw new RangeError(`a call of lua/sliding-log.lua takes at most ${MAX_CALL} bytes (about 2 600 windows)`)
  const bytes = Buffer.allocUnsafe(size)
  bytes.writeUInt16BE(size, 0)
  bytes.write(op, 2, 'latin1')
  bytes.writeDoubleBE(units, 3)
  bytes.writeDoubleBE(0, DEADLINE_AT)
  return bytes
}

function writeWindow(bytes: Buffer, at: number, { limit, windowMs, blockMs = 0 }: LogWindow, shadow: boolean): void {
  bytes.writeDoubleBE(limit, at)
  bytes.writeDoubleBE(windowMs, at + 8)
  bytes.writeDoubleBE(blockMs, at + 16)
  bytes.writeUInt8(shadow ? 1 : 0, at + 24)
}

/** A consume ('c') or peek ('p') of `units` in every window, or a hold ('z') of each key for `units` ms. */
export function windowsCall(op: 'c' | 'p' | 'z', units: number, windows: readonly LogWindow[]): Buffer {
  const bytes = call(op, units, CALL + WINDOW * windows.length)
  const several = windows.length > 1
  for (const [i, window] of windows.entries()) {
    writeWindow(bytes, CALL + WINDOW * i, window, several && window.shadow === true)
  }
  return bytes
}

/**
 * A consume or peek of windows that may differ in cost, or hold slots: 'c'/'p' (what the script's fast path takes)
 * when they do not, and otherwise 'C'/'P', whose `units` is the largest cost (a slot counts one).
 */
export function costWindowsCall(mode: 'consume' | 'peek', windows: readonly CostWindow[], now = Date.now()): Buffer {
  const [first] = windows
  const cost = first?.cost ?? 0
  const plain = (window: CostWindow) =>
    window.cost === cost && window.slots !== true && window.period === undefined && window.share !== true
  if (windows.every(plain)) {
    return windowsCall(mode === 'consume' ? 'c' : 'p', cost, windows)
  }
  const costOf = (window: CostWindow) => (window.slots ? 1 : window.cost)
  const periods = windows.filter((window) => window.period !== undefined).length
  const bytes = call(
    mode === 'consume' ? 'C' : 'P',
    Math.max(...windows.map(costOf)),
    CALL + COST_WINDOW * windows.length + PERIOD_STARTS * periods,
  )
  const several = windows.length > 1
  let at = CALL
  for (const window of windows) {
    bytes.writeDoubleBE(window.limit, at)
    bytes.writeDoubleBE(window.windowMs, at + 8)
    bytes.writeDoubleBE(window.blockMs ?? 0, at + 16)
    bytes.writeDoubleBE(costOf(window), at + 24)
    const flags = (several && window.shadow ? SHADOW : 0) | (window.slots ? SLOTS : 0)
    bytes.writeUInt8(flags | (window.period ? PERIOD : 0) | (window.share ? SHARE : 0), at + 32)
    at += COST_WINDOW
    if (window.period) {
      for (const start of periodStarts(window.period, now)) {
        bytes.writeDoubleBE(start, at)
        at += 8
      }
    }
  }
  return bytes
}

/**
 * Until when (caller's clock, ms) a call's bytes name the right period starts, from when: the current period of its
 * calendar windows by the caller's clock (for ever when it has none).
 */
export function startsValid(windows: readonly CostWindow[], now = Date.now()): { from: number; until: number } {
  let from = Number.NEGATIVE_INFINITY
  let until = Number.POSITIVE_INFINITY
  for (const { period } of windows) {
    if (period === undefined) continue
    const starts = periodStarts(period, now)
    from = Math.max(from, starts[1])
    until = Math.min(until, starts[2])
  }
  return { from, until }
}

/** A slot to free or extend: its id (a store's SlotRequest is one). */
interface SlotId {
  readonly slot: number
}

/** A free ('f') of slots of the call's keys (each a slot's id), announced on `channel` when any was still held. */
export function freeCall(slots: readonly SlotId[], channel: string): Buffer {
  const bytes = call('f', slots.length, CALL + 16 * slots.length + Buffer.byteLength(channel))
  writeSlots(bytes, slots)
  bytes.write(channel, CALL + 16 * slots.length, 'utf8')
  return bytes
}

/** An extend ('e') of slots of the call's keys: each still held until `ms` from now at least. */
export function extendCall(slots: readonly SlotId[], ms: number): Buffer {
  const bytes = call('e', ms, CALL + 16 * slots.length)
  writeSlots(bytes, slots)
  return bytes
}

function writeSlots(bytes: Buffer, slots: readonly SlotId[]): void {
  for (const [i, { slot }] of slots.entries()) {
    bytes.writeDoubleBE(slot, CALL + 16 * i)
    bytes.writeDoubleBE(0, CALL + 16 * i + 8)
  }
}

/**
 * A settle ('s') of each key's entry recorded at `recordedUs` by `delta` units; the last entry is its marker's
 * (0, 0, 0).
 */
export function settleCall(
  entries: readonly { readonly recordedUs: number; readonly windowMs: number; readonly delta: number }[],
): Buffer {
  const bytes = call('s', 0, CALL + 24 * entries.length)
  for (const [i, { recordedUs, windowMs, delta }] of entries.entries()) {
    bytes.writeDoubleBE(recordedUs, CALL + 24 * i)
    bytes.writeDoubleBE(windowMs, CALL + 24 * i + 8)
    bytes.writeDoubleBE(delta, CALL + 24 * i + 16)
  }
  return bytes
}

/** A lease of between `min` and `want` units, recorded at now + ttlMs; on denial, the wait until `waitFor` fit. */
export function leaseCall(
  want: number,
  window: LogWindow,
  { min, waitFor, ttlMs }: { readonly min: number; readonly waitFor: number; readonly ttlMs: number },
): Buffer {
  const bytes = call('l', want, CALL + WINDOW + 24)
  writeWindow(bytes, CALL, window, false)
  bytes.writeDoubleBE(min, CALL + WINDOW)
  bytes.writeDoubleBE(waitFor, CALL + WINDOW + 8)
  bytes.writeDoubleBE(ttlMs, CALL + WINDOW + 16)
  return bytes
}

/**
 * A release ('r') from each key's entry recorded at `recordedUs` (server µs), if still in its window: of its
 * `units`, or of `units` when it names none. A refund's last entry is its marker's (0, 0).
 */
export function releaseCall(
  units: number,
  entries: readonly { readonly recordedUs: number; readonly windowMs: number; readonly units?: number }[],
): Buffer {
  const bytes = call('r', 0, CALL + 24 * entries.length)
  for (const [i, entry] of entries.entries()) {
    bytes.writeDoubleBE(entry.recordedUs, CALL + 24 * i)
    bytes.writeDoubleBE(entry.windowMs, CALL + 24 * i + 8)
    bytes.writeDoubleBE(entry.units ?? units, CALL + 24 * i + 16)
  }
  return bytes
}

/** Sets a call's deadline: the server time in µs after which it records nothing (0 for none). */
export function setDeadline(bytes: Buffer, deadlineUs: number): void {
  bytes.writeDoubleBE(deadlineUs, DEADLINE_AT)
}

// The reply: '>bdI4', then '>bI4I6I6d' per window ('>I4' for a settle).
const REPLY_HEAD = 13
const REPLY_WINDOW = 25
const SETTLE_WINDOW = 4

/** The bytes after its head of the reply of a call decided for `count` windows (a settle's: `settle`). */
export const replyBody = (count: number, settle = false) => (settle ? SETTLE_WINDOW : REPLY_WINDOW) * count

/**
 * A run's reply cut into its calls' replies, each holding `bodies[i]` bytes after its head (replyBody) when
 * decided: each call's status says whether they follow (-1: none; -2: an error message of `units` bytes). A
 * StoreError when the lengths do not add up.
 */
export function splitRun(reply: Buffer, bodies: readonly number[]): Buffer[] {
  const parts: Buffer[] = []
  let at = 0
  for (const body of bodies) {
    let length = REPLY_HEAD
    if (reply.length >= at + REPLY_HEAD) {
      const status = reply.readInt8(at)
      if (status === -2) length += reply.readUInt32BE(at + 9)
      else if (status !== -1) length += body
    }
    parts.push(reply.subarray(at, at + length))
    at += length
  }
  if (at !== reply.length) throw unexpectedReply(reply, slidingLogScript)
  return parts
}

/**
 * A call's reply head: status, server time, units (-1: past its deadline, nothing follows); a ReplyError for an
 * error about one of the call's keys (which failed that call alone), a StoreError unless `body` bytes follow.
 */
function readHead(reply: unknown, body: number): { status: number; nowUs: number; units: number; reply: Buffer } {
  if (!Buffer.isBuffer(reply) || reply.length < REPLY_HEAD) throw unexpectedReply(reply, slidingLogScript)
  const status = reply.readInt8(0)
  const nowUs = reply.readDoubleBE(1)
  const units = reply.readUInt32BE(9)
  if (status === -2) throw new ReplyError(reply.toString('utf8', REPLY_HEAD, REPLY_HEAD + units))
  if (status !== -1 && reply.length !== REPLY_HEAD + body) throw unexpectedReply(reply, slidingLogScript)
  return { status, nowUs, units, reply }
}

/**
 * lua/sliding-log.lua's reply for `count` windows (none when its deadline had passed); a window that recorded the
 * call's units says when (`recorded`, the µs a refund names, as `recordedUs` is; 0 there when none were).
 */
export function readSlidingLog(raw: unknown, count: number) {
  const { status, nowUs, units, reply } = readHead(raw, REPLY_WINDOW * count)
  const windows: (WindowResult & { recordedUs: number })[] = []
  if (status === -1) return { status, nowUs, units, windows }
  for (let at = REPLY_HEAD; at < reply.length; at += REPLY_WINDOW) {
    const recordedUs = reply.readDoubleBE(at + 17)
    const window: { -readonly [K in keyof WindowResult]: WindowResult[K] } & { recordedUs: number } = {
      allowed: reply.readInt8(at) === 1,
      remaining: reply.readUInt32BE(at + 1),
      retryAfterMs: reply.readUIntBE(at + 5, 6),
      resetMs: reply.readUIntBE(at + 11, 6),
      now: nowUs / 1000,
      recordedUs,
    }
    if (recordedUs > 0) window.recorded = recordedUs
    windows.push(window)
  }
  return { status, nowUs, units, windows }
}

/**
 * lua/sliding-log.lua's reply to a settle of `count` windows: its status, the most units moved in one window, and
 * the units each window holds after it (none past the deadline).
 */
export function readSettle(raw: unknown, count: number) {
  const { status, nowUs, units, reply } = readHead(raw, SETTLE_WINDOW * count)
  const used: number[] = []
  if (status !== -1) for (let at = REPLY_HEAD; at < reply.length; at += SETTLE_WINDOW) used.push(reply.readUInt32BE(at))
  return { status, nowUs, units, used }
}

/** A script's reply that is not what it returns: a StoreError that shows it. */
export const unexpectedReply = (reply: unknown, script: LuaScript) =>
  new StoreError(
    `unexpected reply from ${script.name}.lua: ${(Buffer.isBuffer(reply) ? reply.toString('hex') : JSON.stringify(reply))?.slice(0, 200)}`,
  )
