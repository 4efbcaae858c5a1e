import { expect } from 'chai'
import { adviceOf, readQuotas, resetOf } from '../../../packages/core/src/outbound/quota-headers.js'

const NOW = Date.UTC(2026, 0, 1)
const read = (fields: Record<string, string>) => readQuotas(new Headers(fields), NOW)

describe('readQuotas', () => {
  it('reads the IETF RateLimit-Policy and RateLimit lists, joined by policy name', () => {
    expect(
      read({
        'ratelimit-policy': '"burst";q=100;w=60, "daily";q=1000;w=86400',
        ratelimit: '"burst";r=0;t=12, "daily";r=950;t=3600.5',
      }),
    ).to.deep.equal([
      { name: 'burst', unit: 'requests', limit: 100, windowMs: 60_000, remaining: 0, resetMs: 12_000 },
      { name: 'daily', unit: 'requests', limit: 1000, windowMs: 86_400_000, remaining: 950, resetMs: 3_600_500 },
    ])
  })

  it('reads a policy of another unit as other, and tokens for a name as well as strings', () => {
    expect(read({ 'ratelimit-policy': 'bytes;q=5000;w=1;qu="content-bytes"' })).to.deep.equal([
      { name: 'bytes', unit: 'other', limit: 5000, windowMs: 1_000 },
    ])
  })

  it("reads draft 7's RateLimit dictionary and draft 6's three fields", () => {
    expect(read({ ratelimit: 'limit=10, remaining=3, reset=4' })).to.deep.equal([
      { name: '', unit: 'requests', limit: 10, remaining: 3, resetMs: 4_000 },
    ])
    expect(
      read({
        'ratelimit-limit': '10',
        'ratelimit-remaining': '0',
        'ratelimit-reset': '2',
        'ratelimit-policy': '10;w=5',
      }),
    ).to.deep.equal([{ name: '', unit: 'requests', limit: 10, windowMs: 5_000, remaining: 0, resetMs: 2_000 }])
  })

  it('reads the x-ratelimit family: seconds, and epoch seconds (GitHub)', () => {
    expect(read({ 'x-ratelimit-limit': '60', 'x-ratelimit-remaining': '59', 'x-ratelimit-reset': '30' })).to.deep.equal(
      [{ unit: 'requests', limit: 60, remaining: 59, resetMs: 30_000 }],
    )
    const epoch = String(NOW / 1000 + 90)
    expect(
      read({ 'x-ratelimit-limit': '5000', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': epoch }),
    ).to.deep.equal([{ unit: 'requests', limit: 5000, remaining: 0, resetMs: 90_000 }])
  })

  it("reads OpenAI's -requests and -tokens variants with durations", () => {
    expect(
      read({
        'x-ratelimit-limit-requests': '500',
        'x-ratelimit-remaining-requests': '499',
        'x-ratelimit-reset-requests': '120ms',
        'x-ratelimit-limit-tokens': '30000',
        'x-ratelimit-remaining-tokens': '0',
        'x-ratelimit-reset-tokens': '1m30s',
      }),
    ).to.deep.equal([
      { name: 'requests', unit: 'requests', limit: 500, remaining: 499, resetMs: 120 },
      { name: 'tokens', unit: 'tokens', limit: 30000, remaining: 0, resetMs: 90_000 },
    ])
  })

  it('ignores hostile values: huge, negative, NaN, fractions of counts, 10 KB fields', () => {
    const long = `"a";q=1;w=1, ${'x'.repeat(10_000)}`
    expect(read({ 'ratelimit-policy': long, ratelimit: long })).to.deep.equal([])
    expect(
      read({ 'x-ratelimit-limit': '-5', 'x-ratelimit-remaining': 'NaN', 'x-ratelimit-reset': '1e400' }),
    ).to.deep.equal([])
    expect(read({ 'x-ratelimit-limit': '99999999999999999999', 'x-ratelimit-remaining': '1.5' })).to.deep.equal([])
    expect(read({ 'ratelimit-policy': '"a";q=10;w=0, "b";q=Infinity;w=1, "c";q=3;w=-1' })).to.deep.equal([
      { name: 'a', unit: 'requests', limit: 10 },
      { name: 'c', unit: 'requests', limit: 3 },
    ])
    expect(
      read({ ratelimit: '"a";r=2;t=99999999999', 'x-ratelimit-limit': '10', 'x-ratelimit-reset': '9e99' }),
    ).to.deep.equal([
      { name: 'a', unit: 'requests', remaining: 2 },
      { unit: 'requests', limit: 10 },
    ])
    expect(read({ ratelimit: '"unterminated;r=1, \\";q=;;;==,,,' })).to.deep.equal([])
  })
})

describe('resetOf', () => {
  it('reads durations, seconds, epoch seconds and epoch ms', () => {
    expect(['6ms', '1m30s', '0.5s', '2h0m0s', '1m', '1s500ms', '30', '1.25'].map((t) => resetOf(t, NOW))).to.deep.equal(
      [6, 90_000, 500, 7_200_000, 60_000, 1_500, 30_000, 1_250],
    )
    expect(resetOf(String(NOW / 1000 + 5), NOW)).to.equal(5_000)
    expect(resetOf(String(NOW + 250), NOW)).to.equal(250)
    expect(resetOf(String(NOW / 1000 - 5), NOW)).to.equal(0)
  })

  it('reads nonsense as nothing', () => {
    expect(
      ['', 'ms', 'soon', '-1', '1d', '5 s', '1e3', 'NaN', `${'9'.repeat(20)}`].map((t) => resetOf(t, NOW)),
    ).to.deep.equal([undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined])
  })
})

describe('adviceOf', () => {
  it('takes the lowest request quota scaled to the window, and pauses for the longest quota with none left', () => {
    const advice = adviceOf(
      [
        { unit: 'requests', limit: 100, windowMs: 60_000, remaining: 0, resetMs: 12_000 },
        { unit: 'requests', limit: 20, windowMs: 1_000, remaining: 5, resetMs: 400 },
        { unit: 'tokens', limit: 10, remaining: 0, resetMs: 30_000 },
      ],
      1_000,
    )
    expect(advice).to.deep.equal({ limit: 1, pauseMs: 30_000 })
    expect(adviceOf([{ unit: 'requests', limit: 10, windowMs: 1_000 }], 60_000)).to.deep.equal({ limit: 600 })
    expect(adviceOf([{ unit: 'requests', limit: 20 }], 1_000)).to.deep.equal({ limit: 20 })
    expect(adviceOf([{ unit: 'other', limit: 1 }], 1_000)).to.deep.equal({})
    expect(adviceOf([], 1_000)).to.deep.equal({})
  })
})
