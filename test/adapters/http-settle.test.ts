import { EventEmitter } from 'node:events'
import { memoryStore } from '@fleetlimit/core'
import { createHttpLimiter, type HttpRateLimitOptions, onResponseEnd, type RequestInfo } from '@fleetlimit/core/http'
import { expect } from 'chai'
import sinon from 'sinon'

type Req = { readonly url: string }
type Res = { readonly statusCode: number }

const FRAMEWORK = { name: 'Test', trustProxyHint: '', trustAllHint: '' }
const INFO: RequestInfo = {
  ip: '192.0.2.1',
  method: 'GET',
  routePattern: '/x',
  forwardedFor: false,
  trustProxy: 'none',
  peerAddress: '192.0.2.1',
}

function httpLimiter(options: Omit<HttpRateLimitOptions<Req, Res>, 'limit' | 'window'>) {
  return createHttpLimiter<Req, Res>({ limit: 2, window: '1m', ...options }, FRAMEWORK)
}

/** One request through `handle`, and its decision. */
async function admitted(http: ReturnType<typeof httpLimiter>) {
  const outcome = await http.handle({ url: '/x' }, INFO)
  return outcome.decision
}

describe('core/http: settling a request once its response ended', () => {
  it('has nothing to settle without skipFailedRequests or skipSuccessfulRequests', async () => {
    expect(httpLimiter({}).settles).to.equal(false)
    expect(httpLimiter({ skipFailedRequests: false, requestWasSuccessful: () => true }).settles).to.equal(false)
    expect(httpLimiter({ skipFailedRequests: true }).settles).to.equal(true)
    expect(httpLimiter({ skipSuccessfulRequests: true }).settles).to.equal(true)
    const http = httpLimiter({})
    expect(await http.settle({ url: '/x' }, { statusCode: 500 }, await admitted(http), true, 500)).to.equal(undefined)
    expect(http.stats()).to.deep.equal({ releases: 0, releaseErrors: 0, refunds: 0, refundErrors: 0 })
  })

  it('refunds a failed or abandoned request under skipFailedRequests, and counts it', async () => {
    const http = httpLimiter({ skipFailedRequests: true })
    const res = { statusCode: 500 }
    expect(await http.settle({ url: '/x' }, res, await admitted(http), true, 500)).to.deep.equal({
      units: 1,
      outcome: 'refunded',
    })
    expect(await http.settle({ url: '/x' }, res, await admitted(http), false, 200)).to.include({ outcome: 'refunded' })
    expect(await http.settle({ url: '/x' }, res, await admitted(http), true, 399), 'a success').to.equal(undefined)
    expect(http.stats()).to.deep.equal({ releases: 0, releaseErrors: 0, refunds: 2, refundErrors: 0 })
    expect(http.limiter.stats().refundedUnits).to.equal(2)
  })

  it('never refunds a denial, nor a request without a decision', async () => {
    const store = memoryStore()
    const refund = sinon.spy(store, 'refund')
    const http = httpLimiter({ store, skipFailedRequests: true })
    await admitted(http)
    await admitted(http)
    const denied = await admitted(http)
    expect(denied?.allowed).to.equal(false)
    expect(await http.settle({ url: '/x' }, { statusCode: 429 }, denied, true, 429)).to.equal(undefined)
    expect(await http.settle({ url: '/x' }, { statusCode: 503 }, undefined, true, 503)).to.equal(undefined)
    expect(refund.callCount).to.equal(0)
  })

  it('counts a refund the store fails in refundErrors, and resolves', async () => {
    const store = memoryStore()
    sinon.stub(store, 'refund').rejects(new Error('connection lost'))
    const logger = { warn: sinon.fake() }
    const http = httpLimiter({ store, logger, skipFailedRequests: true })
    expect(await http.settle({ url: '/x' }, { statusCode: 500 }, await admitted(http), true, 500)).to.equal(undefined)
    expect(http.stats()).to.deep.equal({ releases: 0, releaseErrors: 0, refunds: 0, refundErrors: 1 })
    expect(http.limiter.stats().storeErrors, 'the limiter counts the failed store call too').to.equal(1)
    expect(logger.warn.firstCall.args[0]).to.contain('connection lost')
    // No answer: the refund may have been applied, so the log does not say the unit stayed.
    expect(logger.warn.firstCall.args[0]).to.contain(
      'it may or may not have been applied, so its unit may still count until it leaves the window; refund(decision) again applies it at most once',
    )
  })

  it('logs a refund the store refused as not applied: its units still count', async () => {
    const store = memoryStore()
    const refused = Object.assign(new Error('ERR something refused'), { name: 'ReplyError' })
    sinon.stub(store, 'refund').rejects(refused)
    const logger = { warn: sinon.fake() }
    const http = httpLimiter({ store, logger, skipFailedRequests: true })
    expect(await http.settle({ url: '/x' }, { statusCode: 500 }, await admitted(http), true, 500)).to.equal(undefined)
    expect(http.stats()).to.deep.equal({ releases: 0, releaseErrors: 0, refunds: 0, refundErrors: 1 })
    expect(logger.warn.callCount).to.equal(1)
    expect(logger.warn.firstCall.args[0]).to.equal(
      'fleetlimit: the store did not confirm a refund for policy "2-per-60000ms" (ERR something refused); it was not applied: its unit still counts until it leaves the window, unless refund(decision) is tried again.',
    )
  })

  it('asks requestWasSuccessful instead of the status, only for a finished response', async () => {
    const requestWasSuccessful = sinon.spy(async (req: Req, res: Res) => req.url === '/x' && res.statusCode === 500)
    const http = httpLimiter({ skipSuccessfulRequests: true, requestWasSuccessful })
    const req = { url: '/x' }
    const res = { statusCode: 500 }
    expect(await http.settle(req, res, await admitted(http), true, 500)).to.include({ outcome: 'refunded' })
    expect(requestWasSuccessful.firstCall.args).to.deep.equal([req, res])
    expect(await http.settle(req, res, await admitted(http), false, 500), 'abandoned: a failure').to.equal(undefined)
    expect(requestWasSuccessful.callCount).to.equal(1)
  })

  it('leaves a request counted, and warns once, when requestWasSuccessful throws or answers no boolean', async () => {
    const logger = { warn: sinon.fake() }
    let answer: () => unknown = () => {
      throw new Error('no status yet')
    }
    const http = httpLimiter({ logger, skipFailedRequests: true, requestWasSuccessful: () => answer() as boolean })
    const settle = async () => http.settle({ url: '/x' }, { statusCode: 500 }, await admitted(http), true, 500)
    expect(await settle()).to.equal(undefined)
    expect(await settle()).to.equal(undefined)
    expect(logger.warn.callCount).to.equal(1)
    expect(logger.warn.firstCall.args[0]).to.equal(
      'fleetlimit: requestWasSuccessful(req, res) threw "no status yet": such requests stay counted.',
    )
    answer = () => 'yes'
    const other = httpLimiter({ logger, skipFailedRequests: true, requestWasSuccessful: () => answer() as boolean })
    expect(await other.settle({ url: '/x' }, { statusCode: 500 }, await admitted(other), true, 500)).to.equal(undefined)
    expect(logger.warn.lastCall.args[0]).to.equal(
      'fleetlimit: requestWasSuccessful(req, res) returned "yes", not true or false: such requests stay counted.',
    )
    expect(other.stats()).to.deep.equal({ releases: 0, releaseErrors: 0, refunds: 0, refundErrors: 0 })
  })

  it('never rejects, even when the logger throws: it runs where nothing awaits it', async () => {
    const logger = { warn: sinon.fake.throws(new Error('log sink down')) }
    const http = httpLimiter({ logger, skipFailedRequests: true, requestWasSuccessful: () => 'yes' as never })
    expect(await http.settle({ url: '/x' }, { statusCode: 500 }, await admitted(http), true, 500)).to.equal(undefined)
    expect(logger.warn.callCount).to.equal(1)
  })

  it('with an in-flight policy, settles every admitted request: its slot is released, once', async () => {
    const store = memoryStore()
    const free = sinon.spy(store, 'free')
    const http = httpLimiter({ store, concurrency: 1 })
    expect(http.settles).to.equal(true)
    const decision = await admitted(http)
    expect((await admitted(http))?.allowed, 'its one slot is held').to.equal(false)
    expect(await http.settle({ url: '/x' }, { statusCode: 200 }, decision, true, 200)).to.equal(undefined)
    expect(free.callCount).to.equal(1)
    expect(http.stats()).to.deep.equal({ releases: 1, releaseErrors: 0, refunds: 0, refundErrors: 0 })
    // Settled again (it never is by an adapter): the slot is not freed twice.
    await http.settle({ url: '/x' }, { statusCode: 200 }, decision, true, 200)
    expect(free.callCount).to.equal(1)
    expect(http.stats().releases).to.equal(1)
    expect((await admitted(http))?.allowed, 'the slot came back').to.equal(true)
  })

  it('with skipFailedRequests and an in-flight policy: a failed request is refunded and its slot released', async () => {
    const http = httpLimiter({ concurrency: 2, skipFailedRequests: true })
    const decision = await admitted(http)
    expect(await http.settle({ url: '/x' }, { statusCode: 500 }, decision, true, 500)).to.deep.equal({
      units: 1,
      outcome: 'refunded',
    })
    expect(http.stats()).to.deep.equal({ releases: 1, releaseErrors: 0, refunds: 1, refundErrors: 0 })
  })

  it('counts a release the store fails in releaseErrors, and resolves', async () => {
    const store = memoryStore()
    sinon.stub(store, 'free').rejects(new Error('connection lost'))
    const logger = { warn: sinon.fake() }
    const http = httpLimiter({ store, logger, concurrency: 1 })
    expect(await http.settle({ url: '/x' }, { statusCode: 200 }, await admitted(http), true, 200)).to.equal(undefined)
    expect(http.stats()).to.deep.equal({ releases: 0, releaseErrors: 1, refunds: 0, refundErrors: 0 })
  })

  describe('onResponseEnd', () => {
    const response = (statusCode: number) =>
      Object.assign(new EventEmitter(), { statusCode, writableFinished: false }) as EventEmitter & {
        statusCode: number
        writableFinished: boolean
      }

    it('reports a finished response once, with its status, though close follows', () => {
      const res = response(201)
      const ended = sinon.fake()
      onResponseEnd(res, ended)
      res.writableFinished = true
      res.emit('finish')
      res.emit('close')
      expect(ended.args).to.deep.equal([[true, 201]])
      expect(res.listenerCount('finish') + res.listenerCount('close'), 'no listener left').to.equal(0)
    })

    it('reports a connection closed before the response finished as not finished', () => {
      const res = response(200)
      const ended = sinon.fake()
      onResponseEnd(res, ended)
      res.emit('close')
      res.emit('finish')
      expect(ended.args).to.deep.equal([[false, 200]])
    })

    it('reports at once a response that finished, or whose connection closed, before it was called', () => {
      const finished = Object.assign(response(503), { writableFinished: true, destroyed: false })
      const closed = Object.assign(response(200), { destroyed: true })
      const ended = sinon.fake()
      onResponseEnd(finished, ended)
      onResponseEnd(closed, ended)
      expect(ended.args).to.deep.equal([
        [true, 503],
        [false, 200],
      ])
      expect(finished.listenerCount('finish') + closed.listenerCount('close'), 'nothing left to wait for').to.equal(0)
    })

    it('listens once per response however many wait, and tells each of them once', () => {
      const res = response(500)
      const ended = [sinon.fake(), sinon.fake(), sinon.fake()]
      for (const callback of ended) onResponseEnd(res, callback)
      expect([res.listenerCount('finish'), res.listenerCount('close')]).to.deep.equal([1, 1])
      res.writableFinished = true
      res.emit('finish')
      res.emit('close')
      expect(ended.map((callback) => callback.args)).to.deep.equal([[[true, 500]], [[true, 500]], [[true, 500]]])
      expect(res.listenerCount('finish') + res.listenerCount('close')).to.equal(0)
    })

    it('takes a close after a finish it did not see as finished', () => {
      const res = response(404)
      const ended = sinon.fake()
      onResponseEnd(res, ended)
      res.writableFinished = true
      res.emit('close')
      expect(ended.args).to.deep.equal([[true, 404]])
    })
  })
})
