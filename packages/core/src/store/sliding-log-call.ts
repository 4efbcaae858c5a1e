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

const CALL = 19 // '>Hc1dd': the call's length in bytes, op, units, deadline
const WINDOW = 25 // '>dddB': limit, window, block, shadow
const DEADLINE_AT = 11
// A call's length is its first two bytes: the script finds the next call of a run by it.
const MAX_CALL = 0xffff

function call(op: 'c' | 'p' | 'l' | 'r' | 'z', units: number, size: number): Buffer {
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

/** A release of `units` from each key's entry recorded at `recordedUs` (server µs), if still in its window. */
export function releaseCall(
  units: number,
  entries: readonly { readonly recordedUs: number; readonly windowMs: number }[],
): Buffer {
  const bytes = call('r', units, CALL + 16 * entries.length)
  for (const [i, { recordedUs, windowMs }] of entries.entries()) {
    bytes.writeDoubleBE(recordedUs, CALL + 16 * i)
    bytes.writeDoubleBE(windowMs, CALL + 16 * i + 8)
  }
  return bytes
}

/** Sets a call's deadline: the server time in µs after which it records nothing (0 for none). */
export function setDeadline(bytes: Buffer, deadlineUs: number): void {
  bytes.writeDoubleBE(deadlineUs, DEADLINE_AT)
}

// The reply: '>bdI4', then '>bI4I6I6d' per window.
const REPLY_HEAD = 13
const REPLY_WINDOW = 25

/**
 * A run's reply cut into its calls' replies, for calls of `windows[i]` windows each: each call's status says whether
 * windows follow (-1: none; -2: an error message of `units` bytes). A StoreError when the lengths do not add up.
 */
export function splitRun(reply: Buffer, windows: readonly number[]): Buffer[] {
  const parts: Buffer[] = []
  let at = 0
  for (const count of windows) {
    let length = REPLY_HEAD
    if (reply.length >= at + REPLY_HEAD) {
      const status = reply.readInt8(at)
      if (status === -2) length += reply.readUInt32BE(at + 9)
      else if (status !== -1) length += REPLY_WINDOW * count
    }
    parts.push(reply.subarray(at, at + length))
    at += length
  }
  if (at !== reply.length) throw unexpectedReply(reply, slidingLogScript)
  return parts
}

/**
 * lua/sliding-log.lua's reply for `count` windows (none when its deadline had passed); a window that recorded the
 * call's units says when (`recorded`, the µs a refund names, as `recordedUs` is; 0 there when none were).
 */
export function readSlidingLog(reply: unknown, count: number) {
  if (!Buffer.isBuffer(reply) || reply.length < REPLY_HEAD) throw unexpectedReply(reply, slidingLogScript)
  const status = reply.readInt8(0)
  const nowUs = reply.readDoubleBE(1)
  const units = reply.readUInt32BE(9)
  if (status === -1) return { status, nowUs, units, windows: [] }
  // An error about one of the call's keys, which failed this call alone: its message follows.
  if (status === -2) throw new ReplyError(reply.toString('utf8', REPLY_HEAD, REPLY_HEAD + units))
  if (reply.length !== REPLY_HEAD + REPLY_WINDOW * count) throw unexpectedReply(reply, slidingLogScript)
  const windows = []
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

/** A script's reply that is not what it returns: a StoreError that shows it. */
export const unexpectedReply = (reply: unknown, script: LuaScript) =>
  new StoreError(
    `unexpected reply from ${script.name}.lua: ${(Buffer.isBuffer(reply) ? reply.toString('hex') : JSON.stringify(reply))?.slice(0, 200)}`,
  )
