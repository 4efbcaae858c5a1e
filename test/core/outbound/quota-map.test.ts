import type { Decision, LearnedLimit, Lesson } from '@fleetlimit/core'
import { expect } from 'chai'
import { type PolicyOptions, resolvePolicy } from '../../../packages/core/src/limiter/policy.js'
import { createAdapter } from '../../../packages/core/src/outbound/adapt.js'
import { type Quota, readQuotas } from '../../../packages/core/src/outbound/quota-headers.js'
import {
  checkQuotas,
  createQuotaRouter,
  type QuotaMap,
  quotaName,
  type Target,
} from '../../../packages/core/src/outbound/quota-map.js'
import { optionErrorOf } from '../../support/option-error.js'

const NOW = Date.UTC(2026, 0, 1)
const read = (fields: Record<string, string>) => readQuotas(new Headers(fields), NOW)
const minute = 60_000
const rpm: Target = { name: 'rpm', window: minute, cost: 1 }
const tpm: Target = { name: 'tpm', window: minute, cost: 1_200 }
/** Where each quota goes: the policy's name, or null for none. */
const routed = (targets: readonly Target[], quotas: readonly Quota[], map?: QuotaMap) => {
  const route = createQuotaRouter(targets, map)
  return quotas.map((q) => [quotaName(q), targets[route(q)]?.name ?? null])
}

const openAi = {
  'x-ratelimit-limit-requests': '500',
  'x-ratelimit-remaining-requests': '499',
  'x-ratelimit-reset-requests': '120ms',
  'x-ratelimit-limit-tokens': '30000',
  'x-ratelimit-remaining-tokens': '28800',
  'x-ratelimit-reset-tokens': '2s400ms',
}

describe('outbound/quota-map: which policy each stated quota bounds', () => {
  it("by default, OpenAI's -requests quota bounds the policy a call counts once in, -tokens the other", () => {
    expect(routed([rpm, tpm], read(openAi))).to.deep.equal([
      ['requests', 'rpm'],
      ['tokens', 'tpm'],
    ])
    // The order of the policies does not matter; nor does the plain family's unnamed quota, a request one.
    expect(routed([tpm, rpm], read({ ...openAi, 'x-ratelimit-limit': '7' }))).to.deep.equal([
      ['requests', 'rpm'],
      ['requests', 'rpm'],
      ['tokens', 'tpm'],
    ])
  })

  it('by default, IETF items bound the policy of their name, else by unit and then window; none when in doubt', () => {
    const ietf = read({
      'ratelimit-policy': '"tpm";q=90000;w=60, "burst";q=10;w=1, "daily";q=5000;w=86400, "tok";q=1;qu="tokens"',
    })
    const perSecond: Target = { name: 'rps', window: 1_000, cost: 1 }
    expect(routed([rpm, tpm, perSecond], ietf)).to.deep.equal([
      ['tpm', 'tpm'],
      ['burst', 'rps'],
      // A request quota of a window no policy has, with two policies a call counts once in: none.
      ['daily', null],
      ['tok', 'tpm'],
    ])
    // Of another unit (content-bytes): none.
    expect(routed([rpm, tpm], read({ 'ratelimit-policy': '"b";q=5;w=1;qu="content-bytes"' }))).to.deep.equal([
      ['b', null],
    ])
    // Two policies a call counts more than once in: a tokens quota of no window cannot be placed.
    const other: Target = { name: 'other', window: minute, cost: 5 }
    expect(routed([rpm, tpm, other], read(openAi))).to.deep.equal([
      ['requests', 'rpm'],
      ['tokens', null],
    ])
  })

  it('with one policy, every request quota bounds it, and a tokens quota none (as before policies were mapped)', () => {
    expect(routed([rpm], read(openAi))).to.deep.equal([
      ['requests', 'rpm'],
      ['tokens', null],
    ])
  })

  it('follows `quotas` when given: a quota it leaves out, or maps to false, bounds none', () => {
    const calls: Target = { name: 'calls', window: minute, cost: 1 }
    const tokens: Target = { name: 'spend', window: minute, cost: 1 }
    expect(routed([calls, tokens], read(openAi), { requests: 'calls', tokens: 'spend' })).to.deep.equal([
      ['requests', 'calls'],
      ['tokens', 'spend'],
    ])
    expect(routed([rpm, tpm], read(openAi), { tokens: false })).to.deep.equal([
      ['requests', null],
      ['tokens', null],
    ])
    // The unnamed request quota (x-ratelimit-limit) goes by 'requests'.
    expect(routed([rpm, tpm], read({ 'x-ratelimit-limit': '5' }), { requests: 'tpm' })).to.deep.equal([
      ['requests', 'tpm'],
    ])
  })

  it('checks `quotas` against the policies that learn, with what to give', () => {
    const targets = [rpm, tpm]
    expect(checkQuotas(undefined, targets)).to.equal(undefined)
    const map = checkQuotas({ requests: 'rpm', tokens: 'tpm', audio: false }, targets)
    expect([map, Object.isFrozen(map)]).to.deep.equal([{ requests: 'rpm', tokens: 'tpm', audio: false }, true])
    expect(optionErrorOf(() => checkQuotas({ tokens: 'tokens' }, targets)).message).to.equal(
      "fleetlimit: invalid option `quotas.tokens`: got \"tokens\"; expected the name of a policy that learns a limit ('rpm', 'tpm'), or false for none.",
    )
    for (const [value, option] of [
      [new Map([['tokens', 'tpm']]), 'quotas'],
      [['rpm'], 'quotas'],
      ['rpm', 'quotas'],
      [{ '': 'rpm' }, 'quotas'],
      [{ ['x'.repeat(65)]: 'rpm' }, 'quotas'],
      [Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`q${i}`, 'rpm'])), 'quotas'],
      [{ tokens: true }, 'quotas.tokens'],
      [{ tokens: 1 }, 'quotas.tokens'],
    ] as const) {
      expect(optionErrorOf(() => checkQuotas(value, targets)).option, JSON.stringify(value)).to.equal(option)
    }
    expect(optionErrorOf(() => checkQuotas({ requests: 'slots' }, [])).option).to.equal('quotas')
  })
})

describe('outbound/quota-map through the adapter: the lessons of one answer, per policy', () => {
  const policies = (...options: PolicyOptions[]) => options.map((o) => resolvePolicy(o))
  /** A limiter of an LLM API's quotas: 60 requests and 100,000 tokens a minute, and 5 calls in flight. */
  const limiter = {
    policies: policies(
      { name: 'rpm', limit: 60, window: '1m' },
      { name: 'tpm', limit: 100_000, window: '1m' },
      { name: 'slots', concurrency: 5 },
    ),
    learned: async (): Promise<LearnedLimit | undefined> => undefined,
    learn: async () => undefined,
  }
  const admitted: Decision = {
    allowed: true,
    limit: 60,
    remaining: 50,
    retryAfterMs: 0,
    resetMs: 1_000,
    source: 'store',
    policy: 'rpm',
    policies: [
      { allowed: true, limit: 60, remaining: 50, retryAfterMs: 0, resetMs: 1_000, source: 'store', policy: 'rpm' },
      {
        allowed: true,
        limit: 100_000,
        remaining: 70_000,
        retryAfterMs: 0,
        resetMs: 1_000,
        source: 'store',
        policy: 'tpm',
      },
    ],
  }
  const answer = (headers: Record<string, string>, status = 200, map?: QuotaMap) =>
    createAdapter(limiter, 'headers', 'api', { rpm: 1, tpm: 1_200 }, map).read(
      new Response('ok', { status, headers }),
      admitted,
    )

  it('teaches each policy its own quota, scaled to its window, and pauses for the longest with none left', () => {
    expect(answer(openAi)).to.deep.equal({
      pauseMs: undefined,
      lessons: [
        { source: 'headers', limit: 500, policy: 'rpm' },
        { source: 'headers', limit: 30_000, policy: 'tpm' },
      ],
    })
    const ietf = answer({
      'ratelimit-policy': '"rpm";q=1;w=1, "tpm";q=2000;w=60;qu="tokens", "rpm";q=9999;w=1',
      ratelimit: '"rpm";r=0;t=1, "tpm";r=0;t=40, "tpm";r=5;t=1',
    })
    // The first of an item named twice counts: 1 per second is 60 a minute.
    expect(ietf).to.deep.equal({
      pauseMs: 40_000,
      lessons: [
        { source: 'headers', limit: 60, policy: 'rpm' },
        { source: 'headers', limit: 2_000, policy: 'tpm' },
      ],
    })
    expect(answer(openAi, 200, { tokens: 'tpm' }).lessons).to.deep.equal([
      { source: 'headers', limit: 30_000, policy: 'tpm' },
    ])
  })

  it("a 'none left' of one quota pauses the key; a tokens quota lowers only the tokens policy", () => {
    expect(
      answer({
        'x-ratelimit-limit-tokens': '20000',
        'x-ratelimit-remaining-tokens': '0',
        'x-ratelimit-reset-tokens': '6s',
      }),
    ).to.deep.equal({ pauseMs: 6_000, lessons: [{ source: 'headers', limit: 20_000, policy: 'tpm' }] })
  })

  it('learns nothing from hostile headers: 10 KB values, negative, NaN, 1e308, a field sent twice', () => {
    const hostile: Record<string, string>[] = [
      { 'x-ratelimit-limit-tokens': '9'.repeat(10_240), 'x-ratelimit-remaining-tokens': '0'.repeat(10_240) },
      {
        'ratelimit-policy': `"tpm";q=5;w=60, ${'"x";q=1, '.repeat(1_200)}`,
        ratelimit: `"tpm";r=0;t=1, ${'"y";r=1, '.repeat(1_200)}`,
      },
      {
        'x-ratelimit-limit-requests': '-5',
        'x-ratelimit-remaining-requests': '-1',
        'x-ratelimit-reset-requests': '-3s',
      },
      { 'x-ratelimit-limit-tokens': 'NaN', 'x-ratelimit-remaining-tokens': 'NaN', 'x-ratelimit-reset-tokens': 'NaN' },
      {
        'x-ratelimit-limit-requests': '1e308',
        'x-ratelimit-remaining-requests': '1e308',
        'x-ratelimit-reset-requests': '1e308',
      },
      { 'x-ratelimit-limit-requests': 'Infinity', 'ratelimit-policy': '"rpm";q=1e308;w=1e308, "tpm";q=-1;w=NaN' },
      { 'x-ratelimit-limit-tokens': '0', 'x-ratelimit-limit-requests': '0.5', 'ratelimit-policy': '"rpm";q=0' },
    ]
    for (const headers of hostile) {
      const { lessons, pauseMs } = answer(headers)
      // A quota of 0 is a quota: it asks for the least limit, a call's cost, which the adapter floors at.
      const zero = headers['x-ratelimit-limit-tokens'] === '0'
      expect([lessons, pauseMs], JSON.stringify(headers).slice(0, 80)).to.deep.equal([
        zero
          ? [
              { source: 'headers', limit: 1, policy: 'rpm' },
              { source: 'headers', limit: 1, policy: 'tpm' },
            ]
          : [],
        undefined,
      ])
    }
    // The same field sent twice reaches the reader joined ("100, 200"): no count, so none.
    const twice = new Headers()
    twice.append('x-ratelimit-limit-tokens', '100')
    twice.append('x-ratelimit-limit-tokens', '200000')
    expect(readQuotas(twice)).to.deep.equal([])
  })

  it("'aimd' cuts every rate policy, each to what it held when the refused call was admitted", () => {
    const aimd = createAdapter(limiter, 'aimd', 'api', { rpm: 1, tpm: 1_200 })
    const refused = aimd.read(new Response('no', { status: 429 }), admitted)
    expect(refused.lessons).to.deep.equal([
      { source: 'aimd', used: 10, policy: 'rpm' },
      { source: 'aimd', used: 30_000, policy: 'tpm' },
    ] satisfies Lesson[])
    expect(aimd.read(new Response('ok'), admitted).lessons).to.deep.equal([])
  })
})
