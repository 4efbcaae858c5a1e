import { createRateLimiter, definePolicy, type Logger } from '@fleetlimit/core'
import { createHttpLimiter } from '@fleetlimit/core/http'
import { expect } from 'chai'
import sinon from 'sinon'
import { optionErrorOf } from '../support/option-error.js'

const optionError = optionErrorOf

const framework = { name: 'Test', trustProxyHint: 'Trust it', trustAllHint: 'Trust fewer' }
const http = (options: object) => () => createHttpLimiter(options as never, framework)
const limiter = (options: object) => () => createRateLimiter(options as never)
const quiet = (): Logger => ({ warn: sinon.fake() })
const warnings = (logger: Logger) => (logger.warn as sinon.SinonSpy).getCalls().map((call) => String(call.args[0]))

describe('options users bring from other rate limiters get ours, with the value in our units', () => {
  const cases: [string, () => unknown, string][] = [
    [
      "rate-limiter-flexible's duration (seconds)",
      limiter({ limit: 10, duration: 60 }),
      "fleetlimit: unknown option `createRateLimiter.duration` (got 60): `duration: 60` (seconds): fleetlimit calls it `window`: `window: '60s'`.",
    ],
    [
      "a duration in the thousands: rate-limiter-flexible's seconds, or koa-ratelimit's milliseconds",
      limiter({ limit: 10, duration: 60_000 }),
      "fleetlimit: unknown option `createRateLimiter.duration` (got 60000): `duration: 60000` (seconds): fleetlimit calls it `window`: `window: '60000s'`, or for koa-ratelimit's milliseconds `window: '1m'`.",
    ],
    [
      "express-rate-limit's windowMs (milliseconds)",
      limiter({ limit: 10, windowMs: 60_000 }),
      "fleetlimit: unknown option `createRateLimiter.windowMs` (got 60000): `windowMs: 60000` (milliseconds): fleetlimit calls it `window`: `window: 60000` or `window: '1m'`.",
    ],
    [
      'a windowMs with no whole unit',
      limiter({ limit: 10, windowMs: 1_500 }),
      "fleetlimit: unknown option `createRateLimiter.windowMs` (got 1500): `windowMs: 1500` (milliseconds): fleetlimit calls it `window`: `window: 1500` or `window: '1500ms'`.",
    ],
    [
      "rate-limiter-flexible's points",
      limiter({ points: 10, window: '1m' }),
      'fleetlimit: unknown option `createRateLimiter.points` (got 10): `points: 10`: fleetlimit calls it `limit`: `limit: 10`.',
    ],
    [
      "rate-limiter-flexible's blockDuration (seconds)",
      limiter({ limit: 10, window: '1m', blockDuration: 300 }),
      "fleetlimit: unknown option `createRateLimiter.blockDuration` (got 300): `blockDuration: 300` (seconds): fleetlimit calls it `blockFor`: `blockFor: '300s'`.",
    ],
    [
      'max',
      limiter({ max: 5, window: '1m' }),
      'fleetlimit: unknown option `createRateLimiter.max` (got 5): `max: 5`: fleetlimit calls it `limit`: `limit: 5`.',
    ],
    [
      "rate-limiter-flexible's keyPrefix, the store's prefix here",
      limiter({ limit: 5, window: '1m', keyPrefix: 'app' }),
      "fleetlimit: unknown option `createRateLimiter.keyPrefix` (got \"app\"): the key prefix is the store's: `store: redisStore(client, { prefix: 'myapp' })`.",
    ],
    [
      'a keyGenerator, where the key is given on each call',
      limiter({ limit: 5, window: '1m', keyGenerator: () => 'k' }),
      'fleetlimit: unknown option `createRateLimiter.keyGenerator` (got a function): fleetlimit takes the key on each call: `limiter.consume(key)`.',
    ],
    [
      "a definePolicy with rate-limiter-flexible's duration",
      () => definePolicy({ limit: 10, duration: 1 } as never),
      "fleetlimit: unknown option `policy.duration` (got 1): `duration: 1` (seconds): fleetlimit calls it `window`: `window: '1s'`.",
    ],
    [
      "express-rate-limit's keyGenerator in an adapter",
      http({ limit: 5, window: '1m', keyGenerator: () => 'k' }),
      'fleetlimit: unknown option `rateLimit.keyGenerator` (got a function): `keyGenerator(req)`: fleetlimit calls it `tenant`: `tenant: (req) => …`, returning the string that is limited (default: the client IP).',
    ],
    [
      "express-rate-limit's standardHeaders",
      http({ limit: 5, window: '1m', standardHeaders: 'draft-7' }),
      'fleetlimit: unknown option `rateLimit.standardHeaders` (got "draft-7"): fleetlimit calls it `headers`: `headers: \'draft-7\'`.',
    ],
    [
      'standardHeaders: true',
      http({ limit: 5, window: '1m', standardHeaders: true }),
      "fleetlimit: unknown option `rateLimit.standardHeaders` (got true): fleetlimit calls it `headers`: `headers: 'draft-8'` (the default), `'draft-7'` or `'draft-6'`.",
    ],
    [
      "express-rate-limit's handler",
      http({ limit: 5, window: '1m', handler: () => {} }),
      "fleetlimit: unknown option `rateLimit.handler` (got a function): fleetlimit calls it `message` (the denial's body: text, JSON, or `message: (req, decision) => body`, with `statusCode`) and `onLimited: (req, decision) => …` (called on every denial).",
    ],
    [
      "express-rate-limit's max as a function of the request",
      http({ max: () => 5, window: '1m' }),
      "fleetlimit: unknown option `rateLimit.max` (got a function): `max(req)`: fleetlimit calls it `limit`: `limit: (req) => …`, this request's limit.",
    ],
    [
      "express-rate-limit's passOnStoreError",
      http({ limit: 5, window: '1m', passOnStoreError: true }),
      "fleetlimit: unknown option `rateLimit.passOnStoreError` (got true): fleetlimit calls it `onStoreError`: `onStoreError: 'fail-open'`.",
    ],
    [
      "@fastify/rate-limit's timeWindow as a string",
      http({ limit: 5, timeWindow: '1 minute' }),
      "fleetlimit: unknown option `rateLimit.timeWindow` (got \"1 minute\"): `timeWindow: '1 minute'`: fleetlimit calls it `window`: `window: 60000` or `window: '1m'`.",
    ],
    [
      "@fastify/rate-limit's timeWindow in milliseconds",
      http({ limit: 5, timeWindow: 5_000 }),
      "fleetlimit: unknown option `rateLimit.timeWindow` (got 5000): `timeWindow: 5000` (milliseconds): fleetlimit calls it `window`: `window: 5000` or `window: '5s'`.",
    ],
    [
      "@fastify/rate-limit's errorResponseBuilder",
      http({ limit: 5, window: '1m', errorResponseBuilder: () => ({}) }),
      'fleetlimit: unknown option `rateLimit.errorResponseBuilder` (got a function): fleetlimit calls it `message`: `message: (req, decision) => body`, with `statusCode` for the status.',
    ],
    [
      "@fastify/rate-limit's allowList",
      http({ limit: 5, window: '1m', allowList: ['127.0.0.1'] }),
      'fleetlimit: unknown option `rateLimit.allowList` (got an array): fleetlimit calls it `skip`: `skip: (req) => allowed.includes(req.ip)`.',
    ],
    [
      "@fastify/rate-limit's skipOnError",
      http({ limit: 5, window: '1m', skipOnError: false }),
      "fleetlimit: unknown option `rateLimit.skipOnError` (got false): fleetlimit calls it `onStoreError`: `onStoreError: 'fail-closed'` (the default).",
    ],
    [
      "@fastify/rate-limit's ban",
      http({ limit: 5, window: '1m', ban: 3 }),
      "fleetlimit: unknown option `rateLimit.ban` (got 3): fleetlimit has no ban count; the nearest is `blockFor`: once a tenant is denied, deny it for that long (`blockFor: '10m'`).",
    ],
    [
      "@fastify/rate-limit's enableDraftSpec",
      http({ limit: 5, window: '1m', enableDraftSpec: true }),
      "fleetlimit: unknown option `rateLimit.enableDraftSpec` (got true): fleetlimit calls it `headers`: `headers: 'draft-6'` sends RateLimit-Limit, -Remaining and -Reset (the default is 'draft-8').",
    ],
    [
      "koa-ratelimit's db",
      http({ limit: 5, window: '1m', db: {} }),
      'fleetlimit: unknown option `rateLimit.db` (got an object): fleetlimit calls it `store`: `store: redisStore(client)`.',
    ],
    [
      "koa-ratelimit's errorMessage",
      http({ limit: 5, window: '1m', errorMessage: 'Slow down' }),
      'fleetlimit: unknown option `rateLimit.errorMessage` (got "Slow down"): fleetlimit calls it `message`: `message: \'Slow down\'`.',
    ],
  ]
  for (const [what, build, message] of cases) {
    it(what, () => {
      expect(optionError(build).message).to.equal(message)
    })
  }

  it('a familiar name whose equivalent is not accepted there lists the accepted options', () => {
    const error = optionError(limiter({ limit: 5, window: '1m', standardHeaders: true }))
    expect(error.option).to.equal('createRateLimiter.standardHeaders')
    expect(error.message).to.match(/\): accepted options are name, limit, window, /)
  })
})

describe('a window or block written as a bare number under a second', () => {
  it('is warned about once per policy, through the logger, naming the unit and what to write', () => {
    const logger = quiet()
    const made = createRateLimiter({ limit: 10, window: 60, logger })
    expect(made.policy).to.include({ name: '10-per-60ms', window: 60 })
    createRateLimiter({ limit: 10, window: 60, logger })
    expect(warnings(logger)).to.deep.equal([
      "fleetlimit: policy \"10-per-60ms\" has `window: 60`, which is 60 milliseconds: a number is milliseconds. If you meant 60 seconds, write `window: '60s'`; to keep 60 ms, write `window: '60ms'`, which says so.",
    ])
  })

  it('blockFor too', () => {
    const logger = quiet()
    createRateLimiter({ name: 'login', limit: 5, window: '1m', blockFor: 300, logger })
    expect(warnings(logger)).to.deep.equal([
      "fleetlimit: policy \"login\" has `blockFor: 300`, which is 300 milliseconds: a number is milliseconds. If you meant 300 seconds, write `blockFor: '300s'`; to keep 300 ms, write `blockFor: '300ms'`, which says so.",
    ])
  })

  it('nothing for a duration with its unit, for 1000 ms and more, or for no block', () => {
    const logger = quiet()
    for (const window of ['60ms', '0.5s', 1_000, 999_999, '1m'] as const) {
      createRateLimiter({ limit: 10, window, blockFor: 0, logger })
    }
    createRateLimiter({ limit: 10, window: '1m', blockFor: '250ms', logger })
    expect(warnings(logger)).to.deep.equal([])
    createRateLimiter({ limit: 10, window: 999, logger })
    expect(warnings(logger)).to.have.length(1)
  })

  it('a policy object keeps how it was written: spread, or in policies, shared by several limiters', () => {
    const logger = quiet()
    const fast = definePolicy({ name: 'fast', limit: 5, window: '500ms' })
    createRateLimiter({ ...fast, logger })
    createRateLimiter({ policies: [fast], logger })
    expect(warnings(logger), "'500ms' said so").to.deep.equal([])
    const bare = definePolicy({ name: 'bare', limit: 5, window: 500 })
    createRateLimiter({ ...bare, logger })
    createRateLimiter({ policies: [bare], logger })
    createRateLimiter({ policies: [bare, fast], logger })
    expect(warnings(logger)).to.have.length(1)
    expect(warnings(logger)[0]).to.match(/^fleetlimit: policy "bare" has `window: 500`, which is 500 milliseconds/)
  })

  it('an adapter with inline options or a policy warns through its logger', () => {
    const logger = quiet()
    createHttpLimiter({ limit: 10, window: 30, logger }, framework)
    createHttpLimiter({ policy: definePolicy({ name: 'p30', limit: 10, window: 30 }), logger }, framework)
    createHttpLimiter({ policy: definePolicy({ name: 'p30s', limit: 10, window: '30s' }), logger }, framework)
    expect(warnings(logger).map((w) => /^fleetlimit: policy "([^"]+)" has `window: 30`, /.exec(w)?.[1])).to.deep.equal([
      '10-per-30ms',
      'p30',
    ])
  })

  it('by default on the console', () => {
    const warn = sinon.stub(console, 'warn')
    try {
      createRateLimiter({ name: `console-${Date.now()}`, limit: 10, window: 100 })
      expect(warn.callCount).to.equal(1)
      expect(String(warn.firstCall.args[0])).to.include('has `window: 100`, which is 100 milliseconds')
    } finally {
      warn.restore()
    }
  })

  it('a bucketed policy alone may be given in policies, as it may be inline', async () => {
    const bucketed = definePolicy({ name: 'b', limit: 2, window: '1m', algorithm: 'bucketed', buckets: 6 })
    const made = createRateLimiter({ policies: [bucketed] })
    expect(made.policy).to.equal(bucketed)
    expect((await made.consume('t')).remaining).to.equal(1)
    const error = optionError(() =>
      createRateLimiter({ policies: [bucketed, definePolicy({ limit: 1, window: '1m' })] }),
    )
    expect(error.option).to.equal('policies')
  })
})

describe('adapters: a function where a policy value belongs throws at construction', () => {
  const cases: [string, unknown, string][] = [
    [
      'name',
      () => 'x',
      'fleetlimit: invalid option `name`: got a function; expected 1 to 64 letters, digits, `.`, `_` or `-`, starting with a letter or digit: of the policy options, only `limit`, `cost` and `concurrency` may be functions of the request.',
    ],
    [
      'onStoreError',
      () => 'fail-open',
      'fleetlimit: invalid option `onStoreError`: got a function; expected "fail-closed" or "fail-open": of the policy options, only `limit`, `cost` and `concurrency` may be functions of the request.',
    ],
    [
      'timeoutMs',
      () => 50,
      "fleetlimit: invalid option `timeoutMs`: got a function; expected a duration such as 100 or '250ms': of the policy options, only `limit`, `cost` and `concurrency` may be functions of the request.",
    ],
    [
      'window',
      () => '1m',
      "fleetlimit: invalid option `window`: got a function; expected a duration such as 60000 or '1m': of the policy options, only `limit`, `cost` and `concurrency` may be functions of the request.",
    ],
  ]
  for (const [option, value, message] of cases) {
    it(option, () => {
      const error = optionError(http({ limit: 5, window: '1m', [option]: value }))
      expect(error.option).to.equal(option)
      expect(error.value).to.equal(value)
      expect(error.message).to.equal(message)
    })
  }

  it('every other policy option too; limit and cost functions are the request’s', () => {
    for (const option of ['scope', 'algorithm', 'buckets', 'fallback', 'blockFor', 'shadow']) {
      expect(optionError(http({ limit: 5, window: '1m', [option]: () => 1 })).option).to.equal(option)
    }
    const plans = createHttpLimiter({ limit: () => 5, cost: () => 1, window: '1m' }, framework)
    expect(plans.limiter.policy.name).to.equal('plan-per-60000ms')
  })
})
