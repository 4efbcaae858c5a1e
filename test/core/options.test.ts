import {
  createRateLimiter,
  definePolicy,
  isFleetlimitError,
  memoryStore,
  type OptionError,
  redisStore,
} from '@fleetlimit/core'
import { expect } from 'chai'
import { optionErrorOf } from '../support/option-error.js'

/** Asserts that `build` throws an ERR_FLEETLIMIT_OPTION naming the option and, when given, the accepted values. */
function expectOptionError(build: () => unknown, option: string, accepted?: RegExp): OptionError {
  const error = optionErrorOf(build)
  expect(error.option).to.equal(option)
  expect(error.message).to.include(`\`${option}\``)
  if (accepted) expect(error.message).to.match(accepted)
  return error
}

const base = { limit: 10, window: '1s' } as const

describe('options are validated at construction', () => {
  for (const limit of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '10', null]) {
    it(`rejects limit ${String(limit)}`, () => {
      const error = expectOptionError(
        () => createRateLimiter({ ...base, limit: limit as number }),
        'limit',
        /whole number from 1/,
      )
      expect(error.value).to.satisfy((value: unknown) => Object.is(value, limit))
    })
  }

  it('requires limit and window', () => {
    expectOptionError(() => createRateLimiter({ window: '1s' } as never), 'limit')
    expectOptionError(() => createRateLimiter({ limit: 5 } as never), 'window')
  })

  for (const window of ['1 minute', '10', '-1s', '0ms', '1w', '', 0, -5, 2.5, Number.NaN, '1.0001ms']) {
    it(`rejects window ${typeof window === 'string' ? `'${window}'` : String(window)}`, () => {
      expectOptionError(() => createRateLimiter({ ...base, window: window as never }), 'window', /'250ms'/)
    })
  }

  it('rejects a default cost above the limit, and a per-call cost above it', async () => {
    expectOptionError(() => createRateLimiter({ ...base, cost: 11 }), 'cost', /from 1 to 10/)
    const limiter = createRateLimiter(base)
    const rejected = await limiter.consume('t', { cost: 11 }).catch((error: unknown) => error)
    expect(isFleetlimitError(rejected, 'ERR_FLEETLIMIT_OPTION')).to.equal(true)
    expect((rejected as OptionError).option).to.equal('cost')
  })

  it('rejects a store that is not a store, and says how to wrap an ioredis client', () => {
    expectOptionError(() => createRateLimiter({ ...base, store: {} as never }), 'store', /redisStore\(client\)/)
    const fakeClient = { evalsha() {}, eval() {}, del() {} }
    expectOptionError(
      () => createRateLimiter({ ...base, store: fakeClient as never }),
      'store',
      /wrap the ioredis client as redisStore\(client\)/,
    )
    expectOptionError(() => redisStore({} as never), 'redisStore(client)', /ioredis/)
  })

  it('rejects unknown option names, naming ours for familiar ones', () => {
    const error = expectOptionError(
      () => createRateLimiter({ ...base, windowMs: 1000 } as never),
      'createRateLimiter.windowMs',
      /calls it `window`/,
    )
    expect(error.value).to.equal(1000)
    expectOptionError(() => createRateLimiter({ ...base, max: 5 } as never), 'createRateLimiter.max', /`limit`/)
    expectOptionError(
      () => definePolicy({ ...base, colour: 'red' } as never),
      'policy.colour',
      /accepted options are name/,
    )
    expectOptionError(() => memoryStore({ clok: () => 1 } as never), 'memoryStore.clok')
    expectOptionError(() => createRateLimiter({ ...base, fallback: { max: 1 } } as never), 'fallback.max')
  })

  it('rejects bad names, store modes, timeouts and fallbacks', () => {
    expectOptionError(() => createRateLimiter({ ...base, name: 'a:b' }), 'name')
    expectOptionError(() => createRateLimiter({ ...base, name: '{tag}' }), 'name')
    expectOptionError(
      () => createRateLimiter({ ...base, onStoreError: 'ignore' as never }),
      'onStoreError',
      /fail-open/,
    )
    expectOptionError(() => createRateLimiter({ ...base, timeoutMs: 0 }), 'timeoutMs')
    expectOptionError(
      () => createRateLimiter({ ...base, onStoreError: 'fail-open', fallback: { limit: 11 } }),
      'fallback.limit',
    )
    expectOptionError(() => createRateLimiter({ ...base, fallback: { limit: 1 } }), 'fallback', /fail-open/)
    expectOptionError(
      () => redisStore({ call() {}, callBuffer() {}, del() {}, status: 'ready' } as never, { prefix: 'a{b}' }),
      'redisStore.prefix',
    )
  })

  it('rejects bad acquire options', async () => {
    const limiter = createRateLimiter(base)
    for (const [options, option] of [
      [{ maxWaitMs: -1 }, 'maxWaitMs'],
      [{ maxWaitMs: 'soon' }, 'maxWaitMs'],
      [{ signal: {} }, 'signal'],
      [{ timeout: 5 }, 'options.timeout'],
    ] as const) {
      const error = await limiter.acquire('t', options as never).catch((e: unknown) => e)
      expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION'), String(error)).to.equal(true)
      expect((error as OptionError).option).to.equal(option)
    }
  })

  it('rejects a key that is not a tenant string or object', async () => {
    const limiter = createRateLimiter(base)
    for (const key of [undefined, null, 42, {}, { tenant: 'a', route: 7 }]) {
      const error = await limiter.consume(key as never).catch((e: unknown) => e)
      expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION'), String(error)).to.equal(true)
    }
  })
})
