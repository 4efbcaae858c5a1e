import { isFleetlimitError } from '@fleetlimit/core'
import { expect } from 'chai'
import { ReplyError } from '../../../packages/core/src/store/server-failure.js'
import {
  costWindowsCall,
  extendCall,
  freeCall,
  leaseCall,
  readSettle,
  readSlidingLog,
  releaseCall,
  replyBody,
  setDeadline,
  settleCall,
  splitRun,
  windowsCall,
} from '../../../packages/core/src/store/sliding-log-call.js'
import { thrown } from '../../support/thrown.js'

/** Bytes from a list of fields: [kind, value], each written big-endian as lua/sliding-log.lua reads it. */
function bytesOf(fields: readonly (readonly ['u16' | 'u8' | 'i8' | 'u32' | 'u48' | 'd' | 's', number | string])[]) {
  const parts = fields.map(([kind, value]) => {
    if (kind === 's') return Buffer.from(value as string, 'utf8')
    const size = { u16: 2, u8: 1, i8: 1, u32: 4, u48: 6, d: 8 }[kind]
    const part = Buffer.alloc(size)
    const n = value as number
    if (kind === 'u16') part.writeUInt16BE(n)
    else if (kind === 'u8') part.writeUInt8(n)
    else if (kind === 'i8') part.writeInt8(n)
    else if (kind === 'u32') part.writeUInt32BE(n)
    else if (kind === 'u48') part.writeUIntBE(n, 0, 6)
    else part.writeDoubleBE(n)
    return part
  })
  return Buffer.concat(parts)
}

/** A call's head: its length, op, units and deadline. */
const head = (size: number, op: string, units: number, deadline = 0) =>
  [
    ['u16', size],
    ['s', op],
    ['d', units],
    ['d', deadline],
  ] as const

describe('sliding-log call (store/sliding-log-call.ts)', () => {
  describe('the argument', () => {
    it('a consume of two windows: the head, then limit, window, block and shadow per window', () => {
      const bytes = windowsCall('c', 2, [
        { limit: 10, windowMs: 1_000 },
        { limit: 100, windowMs: 60_000, blockMs: 5_000, shadow: true },
      ])
      expect(bytes).to.deep.equal(
        bytesOf([
          ...head(69, 'c', 2),
          ['d', 10],
          ['d', 1_000],
          ['d', 0],
          ['u8', 0],
          ['d', 100],
          ['d', 60_000],
          ['d', 5_000],
          ['u8', 1],
        ]),
      )
    })

    it('a lone window is never a shadow one', () => {
      expect(windowsCall('p', 1, [{ limit: 5, windowMs: 10, shadow: true }])).to.deep.equal(
        bytesOf([...head(44, 'p', 1), ['d', 5], ['d', 10], ['d', 0], ['u8', 0]]),
      )
    })

    it('windows of one cost and no slots take the fast op; others the cost op with the largest cost', () => {
      const same = [
        { limit: 5, windowMs: 10, cost: 3 },
        { limit: 6, windowMs: 20, cost: 3 },
      ]
      expect(costWindowsCall('consume', same)).to.deep.equal(windowsCall('c', 3, same))
      expect(costWindowsCall('peek', same)).to.deep.equal(windowsCall('p', 3, same))
      const mixed = costWindowsCall('consume', [
        { limit: 5, windowMs: 10, cost: 3, shadow: true },
        { limit: 2, windowMs: 20, cost: 7, slots: true },
      ])
      expect(mixed).to.deep.equal(
        bytesOf([
          ...head(85, 'C', 3),
          ['d', 5],
          ['d', 10],
          ['d', 0],
          ['d', 3],
          ['u8', 1],
          ['d', 2],
          ['d', 20],
          ['d', 0],
          ['d', 1],
          ['u8', 2],
        ]),
      )
      expect(costWindowsCall('peek', [{ limit: 5, windowMs: 10, cost: 4, slots: true }]).subarray(0, 11)).to.deep.equal(
        bytesOf([
          ['u16', 52],
          ['s', 'P'],
          ['d', 1],
        ]),
      )
    })

    it('a free names the slots and the channel; an extend the slots and the ms', () => {
      expect(freeCall([{ slot: 7 }, { slot: 9 }], 'ch')).to.deep.equal(
        bytesOf([...head(53, 'f', 2), ['d', 7], ['d', 0], ['d', 9], ['d', 0], ['s', 'ch']]),
      )
      expect(extendCall([{ slot: 7 }], 500)).to.deep.equal(bytesOf([...head(35, 'e', 500), ['d', 7], ['d', 0]]))
    })

    it('a settle, a lease and a release: their fields in order', () => {
      expect(settleCall([{ recordedUs: 1_500, windowMs: 1_000, delta: -2 }])).to.deep.equal(
        bytesOf([...head(43, 's', 0), ['d', 1_500], ['d', 1_000], ['d', -2]]),
      )
      expect(leaseCall(8, { limit: 10, windowMs: 1_000 }, { min: 2, waitFor: 3, ttlMs: 300 })).to.deep.equal(
        bytesOf([...head(68, 'l', 8), ['d', 10], ['d', 1_000], ['d', 0], ['u8', 0], ['d', 2], ['d', 3], ['d', 300]]),
      )
      expect(
        releaseCall(4, [
          { recordedUs: 1_500, windowMs: 1_000 },
          { recordedUs: 2_500, windowMs: 2_000, units: 1 },
        ]),
      ).to.deep.equal(
        bytesOf([...head(67, 'r', 0), ['d', 1_500], ['d', 1_000], ['d', 4], ['d', 2_500], ['d', 2_000], ['d', 1]]),
      )
    })

    it('setDeadline writes the deadline in place', () => {
      const bytes = windowsCall('c', 1, [{ limit: 5, windowMs: 10 }])
      setDeadline(bytes, 123_456)
      expect(bytes).to.deep.equal(bytesOf([...head(44, 'c', 1, 123_456), ['d', 5], ['d', 10], ['d', 0], ['u8', 0]]))
    })

    it('refuses a call longer than its two-byte length can say', () => {
      const windows = Array.from({ length: 2_621 }, () => ({ limit: 1, windowMs: 1 }))
      expect(windowsCall('c', 1, windows.slice(1)).readUInt16BE(0)).to.equal(65_519)
      expect(() => windowsCall('c', 1, windows)).to.throw(
        RangeError,
        'a call of lua/sliding-log.lua takes at most 65535 bytes (about 2 600 windows)',
      )
    })
  })

  describe('the reply', () => {
    /** A window's reply: allowed, remaining, retryAfterMs, resetMs, recorded (µs). */
    const window = (allowed: number, remaining: number, retry: number, reset: number, recordedUs: number) =>
      [
        ['i8', allowed],
        ['u32', remaining],
        ['u48', retry],
        ['u48', reset],
        ['d', recordedUs],
      ] as const

    it('reads each window, the server time in ms, and recorded only where units were', () => {
      const reply = bytesOf([
        ['i8', 1],
        ['d', 1_500_250],
        ['u32', 2],
        ...window(1, 3, 0, 1_000, 1_500_250),
        ...window(0, 0, 750, 900, 0),
      ])
      expect(readSlidingLog(reply, 2)).to.deep.equal({
        status: 1,
        nowUs: 1_500_250,
        units: 2,
        windows: [
          {
            allowed: true,
            remaining: 3,
            retryAfterMs: 0,
            resetMs: 1_000,
            now: 1_500.25,
            recordedUs: 1_500_250,
            recorded: 1_500_250,
          },
          { allowed: false, remaining: 0, retryAfterMs: 750, resetMs: 900, now: 1_500.25, recordedUs: 0 },
        ],
      })
      expect(replyBody(2)).to.equal(50)
    })

    it('a call past its deadline has no windows', () => {
      const reply = bytesOf([
        ['i8', -1],
        ['d', 9_000],
        ['u32', 0],
      ])
      expect(readSlidingLog(reply, 3)).to.deep.equal({ status: -1, nowUs: 9_000, units: 0, windows: [] })
      expect(readSettle(reply, 3)).to.deep.equal({ status: -1, nowUs: 9_000, units: 0, used: [] })
    })

    it('reads a settle: the units each window holds after it', () => {
      const reply = bytesOf([
        ['i8', 1],
        ['d', 9_000],
        ['u32', 4],
        ['u32', 6],
        ['u32', 0],
      ])
      expect(readSettle(reply, 2)).to.deep.equal({ status: 1, nowUs: 9_000, units: 4, used: [6, 0] })
      expect(replyBody(2, true)).to.equal(8)
    })

    it('an error about a key is a ReplyError with its message; a reply of the wrong length a StoreError', () => {
      const message = 'WRONGTYPE Operation against a key holding the wrong kind of value'
      const error = thrown(() =>
        readSlidingLog(
          bytesOf([
            ['i8', -2],
            ['d', 0],
            ['u32', Buffer.byteLength(message)],
            ['s', message],
          ]),
          1,
        ),
      )
      expect(error).to.be.instanceOf(ReplyError)
      expect((error as Error).message).to.equal(message)
      const short = thrown(() =>
        readSlidingLog(
          bytesOf([
            ['i8', 1],
            ['d', 0],
            ['u32', 0],
          ]),
          1,
        ),
      )
      expect(isFleetlimitError(short, 'ERR_FLEETLIMIT_STORE'), String(short)).to.equal(true)
      expect((short as Error).message).to.equal(
        'fleetlimit: unexpected reply from sliding-log.lua: 01000000000000000000000000',
      )
      const notBytes = thrown(() => readSlidingLog('OK', 1))
      expect((notBytes as Error).message).to.equal('fleetlimit: unexpected reply from sliding-log.lua: "OK"')
    })

    it('splitRun cuts a run into its calls by their status, and refuses lengths that do not add up', () => {
      const decided = bytesOf([['i8', 1], ['d', 1], ['u32', 1], ...window(1, 0, 0, 10, 1)])
      const late = bytesOf([
        ['i8', -1],
        ['d', 2],
        ['u32', 0],
      ])
      const failed = bytesOf([
        ['i8', -2],
        ['d', 3],
        ['u32', 3],
        ['s', 'ERR'],
      ])
      const parts = splitRun(Buffer.concat([decided, late, failed]), [replyBody(1), replyBody(1), replyBody(1)])
      expect(parts).to.deep.equal([decided, late, failed])
      const error = thrown(() => splitRun(Buffer.concat([decided, late]), [replyBody(1)]))
      expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE'), String(error)).to.equal(true)
    })
  })
})
