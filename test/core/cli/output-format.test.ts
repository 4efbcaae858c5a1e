import { expect } from 'chai'
import {
  columns,
  describePolicy,
  duration,
  periodLines,
  policyFlags,
  policyJson,
  routeFlag,
  usageJson,
  usageLines,
  zonedTime,
} from '../../../packages/core/src/cli/output-format.js'
import { parseStoredKey } from '../../../packages/core/src/cli/stored-keys.js'
import { buildKey, type KeyInput } from '../../../packages/core/src/limiter/keys.js'
import { definePolicy, policyKeyName } from '../../../packages/core/src/limiter/policy.js'

const RATE = { name: 'api', window: 60_000, algorithm: 'sliding-log' as const }
const BUCKETED = { name: 'search', window: 3_600_000, algorithm: 'bucketed' as const, buckets: 12 }
const DAILY = {
  name: 'quota',
  window: 90_000_000,
  algorithm: 'sliding-log' as const,
  period: 'day' as const,
  timeZone: 'Pacific/Auckland',
}
const SLOTS = { name: 'uploads', window: 90_000, algorithm: 'sliding-log' as const, inFlight: true as const }

describe('core/cli/output-format: how the commands print', () => {
  it('a duration as its shortest exact string', () => {
    expect([86_400_000, 7_200_000, 60_000, 90_000, 1_000, 1_500].map(duration)).to.deep.equal([
      '1d',
      '2h',
      '1m',
      '90s',
      '1s',
      '1500ms',
    ])
  })

  it('a policy for a person, for --json, and as the flags that name its keys', () => {
    expect([describePolicy(RATE, 100), describePolicy(BUCKETED, undefined), describePolicy(SLOTS, 3)]).to.deep.equal([
      'api, window 1m, limit 100',
      'search, window 1h, bucketed (12 buckets)',
      'uploads, in flight, slots live 90s, concurrency 3',
    ])
    expect([policyJson(RATE, 100), policyJson(BUCKETED, undefined), policyJson(SLOTS, undefined)]).to.deep.equal([
      { name: 'api', windowMs: 60_000, algorithm: 'sliding-log', limit: 100 },
      { name: 'search', windowMs: 3_600_000, algorithm: 'bucketed', buckets: 12 },
      { name: 'uploads', inFlight: true, slotTtlMs: 90_000 },
    ])
    expect([policyFlags(RATE), policyFlags(BUCKETED), policyFlags(SLOTS)]).to.deep.equal([
      '--policy api --window 1m',
      '--policy search --window 1h --algorithm bucketed --buckets 12',
      '--policy uploads --slot-ttl 90s',
    ])
  })

  it('a peek’s usage lines: units and a pause, or slots held', () => {
    const next = { allowed: false, remaining: 0, retryAfterMs: 1_250, resetMs: 30_000, now: 0 }
    expect(usageLines({ used: 4, resetMs: 30_000, pausedMs: 0 }, 4, next)).to.deep.equal([
      ['used', '4 of 4 (0 remaining)'],
      ['window', 'empties in 30.0 s'],
      ['paused', 'no'],
      ['next call', 'denied, retry in 1.3 s'],
    ])
    expect(
      usageLines({ used: 1, resetMs: 9_000, pausedMs: 0, nextSlotEndMs: 4_000 }, undefined, undefined),
    ).to.deep.equal([
      ['held', '1 slot'],
      ['slots', 'the next ends in 4.0 s, the last in 9.0 s'],
    ])
  })

  it('a route flag quoted for a shell; none said so', () => {
    const keyName = policyKeyName(definePolicy({ name: 'api', limit: 5, window: '1m' }))
    const stored = (input: KeyInput) => {
      const found = parseStoredKey(`fleetlimit:${buildKey(keyName, input)}`, 'fleetlimit')
      if (!found) throw new Error('not parsed')
      return found
    }
    expect(routeFlag(stored({ tenant: 't1', route: "GET /it's" }))).to.equal(`--route 'GET /it'\\''s'`)
    expect(routeFlag(stored('t1'))).to.equal('no --route')
  })

  it('rows as aligned columns, two spaces apart, the last left ragged', () => {
    expect(
      columns([
        ['USED', 'KEY'],
        ['12', 'a:b'],
      ]),
    ).to.equal('USED  KEY\n12    a:b')
  })

  it('an instant in a zone as ISO 8601 with that zone’s offset then', () => {
    const instant = Date.UTC(2026, 11, 6, 11)
    expect(zonedTime(instant, 'Pacific/Auckland')).to.equal('2026-12-07T00:00:00+13:00')
    expect(zonedTime(instant, 'America/New_York')).to.equal('2026-12-06T06:00:00-05:00')
    expect(zonedTime(instant, 'UTC')).to.equal('2026-12-06T11:00:00+00:00')
    expect(zonedTime(instant + 250, 'Asia/Kolkata')).to.equal('2026-12-06T16:30:00.250+05:30')
    // Auckland in winter: +12:00.
    expect(zonedTime(Date.UTC(2026, 6, 1, 12), 'Pacific/Auckland')).to.equal('2026-07-02T00:00:00+12:00')
  })

  it('a calendar policy for a person, for --json, and as its flags', () => {
    expect(describePolicy(DAILY, 3)).to.equal('quota, per day in Pacific/Auckland, limit 3')
    expect(policyJson(DAILY, undefined)).to.deep.equal({ name: 'quota', period: 'day', timeZone: 'Pacific/Auckland' })
    expect(policyFlags(DAILY)).to.equal('--policy quota --period day --time-zone Pacific/Auckland')
  })

  it('a calendar peek’s lines: the count, the period’s start and its reset in the zone, a pause', () => {
    const period = { start: Date.UTC(2026, 11, 6, 11), end: Date.UTC(2026, 11, 7, 11) }
    const next = { allowed: true, remaining: 1, retryAfterMs: 0, resetMs: 3_600_000, now: 0 }
    expect(periodLines({ used: 2, resetMs: 3_600_000, pausedMs: 0, period }, DAILY, 3, next)).to.deep.equal([
      ['used', '2 of 3 (1 remaining)'],
      ['period', 'day from 2026-12-07T00:00:00+13:00'],
      ['resets', 'at 2026-12-08T00:00:00+13:00, in 3600.0 s'],
      ['paused', 'no'],
      ['next call', 'admitted'],
    ])
    expect(
      periodLines({ used: 0, resetMs: 0, pausedMs: 5_000, period: undefined }, DAILY, undefined, undefined),
    ).to.deep.equal([
      ['used', '0'],
      ['period', 'day, none counted'],
      ['paused', 'for 5.0 s more'],
    ])
  })

  it('a calendar usage for --json: its period’s start and reset as instants in the zone', () => {
    const period = { start: Date.UTC(2026, 11, 6, 11), end: Date.UTC(2026, 11, 7, 11) }
    expect(usageJson({ used: 2, resetMs: 10, pausedMs: 0, period }, DAILY)).to.deep.equal({
      used: 2,
      resetMs: 10,
      pausedMs: 0,
      periodStart: '2026-12-07T00:00:00+13:00',
      resetAt: '2026-12-08T00:00:00+13:00',
    })
    expect(usageJson({ used: 0, resetMs: 0, pausedMs: 9, period: undefined }, DAILY)).to.deep.include({
      periodStart: null,
      resetAt: null,
    })
    expect(usageJson({ used: 1, resetMs: 5, pausedMs: 0 }, RATE)).to.deep.equal({ used: 1, resetMs: 5, pausedMs: 0 })
  })
})
