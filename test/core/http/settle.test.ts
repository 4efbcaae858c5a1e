import { EventEmitter } from 'node:events'
import { expect } from 'chai'
import type { ResolvedHttpOptions } from '../../../packages/core/src/http/resolved-http-options.js'
import { createSettler, type NodeResponse, onResponseEnd } from '../../../packages/core/src/http/settle.js'
import { admittedDecision } from '../../support/decisions.js'

/** A Node response stand-in: finish() and close() emit as http.ServerResponse does. */
class FakeResponse extends EventEmitter implements NodeResponse {
  writableFinished = false
  destroyed = false
  statusCode = 200
  finish(status: number) {
    this.statusCode = status
    this.writableFinished = true
    this.emit('finish')
    this.emit('close')
  }
}

const admitted = admittedDecision()

/** A settler over a stub limiter whose release and refund log their calls, or fail. */
function settlerOf(options: Partial<ResolvedHttpOptions<unknown, unknown>>, fail = false) {
  const calls: string[] = []
  const warnings: string[] = []
  const limiter = {
    async release() {
      calls.push('release')
      if (fail) throw new Error('store down')
      return { slots: 1, outcome: 'released' as const }
    },
    async refund() {
      calls.push('refund')
      if (fail) throw new Error('store down')
      return { units: 1, outcome: 'refunded' as const }
    },
  }
  const resolved = { limiter, skipFailed: false, skipSuccessful: false, inFlight: new Set<string>(), ...options }
  const settler = createSettler(resolved as unknown as ResolvedHttpOptions<unknown, unknown>, (_kind, message) =>
    warnings.push(message()),
  )
  return { settler, calls, warnings }
}

describe('http settle (http/settle.ts)', () => {
  describe('onResponseEnd', () => {
    it('reports a finished response once, with its status, to every limiter waiting on it', () => {
      const res = new FakeResponse()
      const ends: string[] = []
      onResponseEnd(res, (finished, status) => ends.push(`a ${finished} ${status}`))
      onResponseEnd(res, (finished, status) => ends.push(`b ${finished} ${status}`))
      expect(res.listenerCount('finish')).to.equal(1)
      res.finish(201)
      expect(ends).to.deep.equal(['a true 201', 'b true 201'])
      expect([res.listenerCount('finish'), res.listenerCount('close')]).to.deep.equal([0, 0])
    })

    it('a connection closed first is not finished; a response ended already is reported at once', () => {
      const res = new FakeResponse()
      const ends: string[] = []
      onResponseEnd(res, (finished, status) => ends.push(`${finished} ${status}`))
      res.emit('close')
      expect(ends).to.deep.equal(['false 200'])
      const done = new FakeResponse()
      done.finish(404)
      onResponseEnd(done, (finished, status) => ends.push(`${finished} ${status}`))
      const gone = new FakeResponse()
      gone.destroyed = true
      onResponseEnd(gone, (finished, status) => ends.push(`${finished} ${status}`))
      expect(ends).to.deep.equal(['false 200', 'true 404', 'false 200'])
    })
  })

  describe('createSettler', () => {
    it('settles only with a refund option or an in-flight policy', () => {
      expect(settlerOf({}).settler.settles).to.equal(false)
      expect(settlerOf({ skipFailed: true }).settler.settles).to.equal(true)
      expect(settlerOf({ skipSuccessful: true }).settler.settles).to.equal(true)
      expect(settlerOf({ inFlight: new Set(['slots']) }).settler.settles).to.equal(true)
    })

    it('releases an admission with slots; refunds a failed one with skipFailed, by status or a closed connection', async () => {
      const { settler, calls } = settlerOf({ skipFailed: true, inFlight: new Set(['slots']) })
      expect(await settler.settle({}, {}, admitted, true, 200)).to.equal(undefined)
      expect(calls).to.deep.equal(['release'])
      expect(await settler.settle({}, {}, admitted, true, 500)).to.deep.equal({ units: 1, outcome: 'refunded' })
      expect(await settler.settle({}, {}, admitted, false, 200)).to.deep.equal({ units: 1, outcome: 'refunded' })
      expect(await settler.settle({}, {}, { ...admitted, allowed: false }, true, 500)).to.equal(undefined)
      expect(await settler.settle({}, {}, undefined, true, 500)).to.equal(undefined)
      expect(calls).to.deep.equal(['release', 'release', 'refund', 'release', 'refund'])
      expect(settler.stats()).to.deep.equal({ releases: 3, releaseErrors: 0, refunds: 2, refundErrors: 0 })
    })

    it('skipSuccessful asks requestWasSuccessful; an answer not boolean, or a throw, keeps the request counted', async () => {
      let answer: unknown = true
      const { settler, calls, warnings } = settlerOf({
        skipSuccessful: true,
        wasSuccessful: () => {
          if (answer instanceof Error) throw answer
          return answer as boolean
        },
      })
      await settler.settle({}, {}, admitted, true, 500)
      answer = false
      await settler.settle({}, {}, admitted, true, 200)
      answer = 'yes'
      await settler.settle({}, {}, admitted, true, 200)
      answer = new Error('bad')
      await settler.settle({}, {}, admitted, true, 200)
      expect(calls).to.deep.equal(['refund'])
      expect(warnings).to.deep.equal([
        'requestWasSuccessful(req, res) returned "yes", not true or false: such requests stay counted.',
        'requestWasSuccessful(req, res) threw "bad": such requests stay counted.',
      ])
    })

    it('never rejects: failed releases and refunds are counted', async () => {
      const { settler } = settlerOf({ skipFailed: true, inFlight: new Set(['slots']) }, true)
      expect(await settler.settle({}, {}, admitted, true, 500)).to.equal(undefined)
      expect(settler.stats()).to.deep.equal({ releases: 0, releaseErrors: 1, refunds: 0, refundErrors: 1 })
    })
  })
})
