import { createRateLimiter, definePolicy, type Logger, memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'
import sinon from 'sinon'

const quiet = (): Logger => ({ warn: sinon.fake() })
const warnings = (logger: Logger) => (logger.warn as sinon.SinonSpy).getCalls().map((call) => String(call.args[0]))

describe('policy names on one store: one name, one limit', () => {
  it('a second limiter giving a name other limits is told once, with a code; the same limits are not', () => {
    const store = memoryStore()
    const logger = quiet()
    createRateLimiter({ store, name: 'api', limit: 5, window: '1m', logger })
    createRateLimiter({ store, name: 'api', limit: 5, window: '1m', logger })
    expect(warnings(logger)).to.deep.equal([])
    createRateLimiter({ store, name: 'api', limit: 100, window: '1m', logger })
    expect(warnings(logger)).to.deep.equal([
      'fleetlimit: policy "api" has two limits on one store (ERR_FLEETLIMIT_POLICY_CONFLICT): limit 100 per 60000 ' +
        'ms here, limit 5 per 60000 ms in a limiter built before. Both count in the same keys, each under its own ' +
        'limit, so each admits less than it says, and clients see both under one name in the RateLimit headers. ' +
        'Give each policy its own name, or define it once with definePolicy and share it.',
    ])
    createRateLimiter({ store, name: 'api', limit: 7, window: '1m', logger })
    expect(warnings(logger), 'once per store and name').to.have.length(1)
  })

  it('another window is told too; other stores and names are not', () => {
    const store = memoryStore()
    const logger = quiet()
    createRateLimiter({ store, policies: [definePolicy({ name: 'search', limit: 5, window: '10s' })], logger })
    createRateLimiter({ store: memoryStore(), name: 'search', limit: 50, window: '10s', logger })
    createRateLimiter({ store, name: 'other', limit: 50, window: '10s', logger })
    expect(warnings(logger)).to.deep.equal([])
    createRateLimiter({ store, name: 'search', limit: 5, window: '1m', logger })
    expect(warnings(logger)).to.have.length(1)
    expect(warnings(logger)[0]).to.include(
      'limit 5 per 60000 ms here, limit 5 per 10000 ms in a limiter built before. Their windows differ, so they count apart,',
    )
  })

  it('in-flight limits of one name are compared too', () => {
    const store = memoryStore()
    const logger = quiet()
    createRateLimiter({ store, name: 'jobs', concurrency: 2, logger })
    createRateLimiter({ store, name: 'jobs', concurrency: 3, logger })
    expect(warnings(logger)[0]).to.include('3 in flight (slots live 60000 ms) here, 2 in flight (slots live 60000 ms)')
  })
})
