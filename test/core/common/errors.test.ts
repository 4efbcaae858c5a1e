import { expect } from 'chai'
import {
  describe as describeValue,
  FleetlimitError,
  isFleetlimitError,
  OptionError,
  QueueFullError,
  RateLimitTimeoutError,
  StoreError,
} from '../../../packages/core/src/common/errors.js'

describe('errors', () => {
  it('each class carries its stable code, its name and its message', () => {
    const option = new OptionError('limit', -1, 'a whole number from 1 to 1000000000')
    expect(option).to.include({ code: 'ERR_FLEETLIMIT_OPTION', name: 'OptionError', option: 'limit', value: -1 })
    expect(option.message).to.equal(
      'fleetlimit: invalid option `limit`: got -1; expected a whole number from 1 to 1000000000.',
    )

    const timeout = new RateLimitTimeoutError(250, 100)
    expect(timeout).to.include({ code: 'ERR_FLEETLIMIT_TIMEOUT', name: 'RateLimitTimeoutError', retryAfterMs: 250 })
    expect(timeout.message).to.equal(
      'fleetlimit: not admitted within maxWaitMs (100 ms); the limit allows a retry in 250 ms.',
    )

    const full = new QueueFullError(1000, 1000)
    expect(full).to.include({ code: 'ERR_FLEETLIMIT_QUEUE_FULL', queueLength: 1000, maxQueue: 1000 })
    expect(full.message).to.match(/^fleetlimit: acquire\(\) queue of this key is full: 1000 waiters, /)

    const cause = new Error('ECONNREFUSED')
    const store = new StoreError('the store is unreachable', { cause, retryAfterMs: 400 })
    expect(store).to.include({ code: 'ERR_FLEETLIMIT_STORE', retryAfterMs: 400, cause })
    expect(store.message).to.equal('fleetlimit: the store is unreachable')
    expect(new StoreError('down').retryAfterMs).to.equal(1_000)
  })

  it('an unknown option, and a factory used as what it makes, read as such', () => {
    expect(new OptionError('windowMs', 60_000, "use `window: '1m'`", true).message).to.equal(
      "fleetlimit: unknown option `windowMs` (got 60000): use `window: '1m'`.",
    )
    expect(new OptionError('rateLimit', undefined, 'call rateLimit(options) first', 'misuse').message).to.equal(
      'fleetlimit: call rateLimit(options) first.',
    )
  })

  it('isFleetlimitError knows the brand, not the class: a copy of the package is recognised, a look-alike is not', () => {
    const error = new StoreError('down')
    expect(isFleetlimitError(error)).to.equal(true)
    expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE')).to.equal(true)
    expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION')).to.equal(false)
    // What another copy of the class makes: the registered symbol, no shared prototype.
    const copy = Object.assign(new Error('x'), {
      code: 'ERR_FLEETLIMIT_TIMEOUT',
      [Symbol.for('fleetlimit.error')]: true,
    })
    expect(isFleetlimitError(copy, 'ERR_FLEETLIMIT_TIMEOUT')).to.equal(true)
    expect(isFleetlimitError(Object.assign(new Error('x'), { code: 'ERR_FLEETLIMIT_STORE' }))).to.equal(false)
    expect(isFleetlimitError(null)).to.equal(false)
    expect(isFleetlimitError('ERR_FLEETLIMIT_STORE')).to.equal(false)
    expect(new FleetlimitError('ERR_FLEETLIMIT_STORE', 'm')).to.be.instanceOf(Error)
  })

  it('describe renders any value short and safe', () => {
    expect(describeValue('api')).to.equal('"api"')
    expect(describeValue('x'.repeat(61))).to.equal(`"${'x'.repeat(60)}…"`)
    expect(describeValue(1.5)).to.equal('1.5')
    expect(describeValue(false)).to.equal('false')
    expect(describeValue(10n)).to.equal('10')
    expect(describeValue(null)).to.equal('null')
    expect(describeValue(undefined)).to.equal('undefined')
    expect(describeValue(() => 1)).to.equal('a function')
    expect(describeValue([1])).to.equal('an array')
    expect(describeValue({ secret: 'x' })).to.equal('an object')
  })
})
