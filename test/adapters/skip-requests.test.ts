import { definePolicy, memoryStore, type Store } from '@fleetlimit/core'
import { rateLimit as expressRateLimit } from '@fleetlimit/express'
import { rateLimit as fastifyRateLimit } from '@fleetlimit/fastify'
import { rateLimit as koaRateLimit } from '@fleetlimit/koa'
import { expect } from 'chai'
import express from 'express'
import Fastify from 'fastify'
import sinon from 'sinon'
import request from 'supertest'
import { type Exchange, flavours, type SharedOptions } from '../support/adapter-harness.js'
import { adapterStores } from '../support/adapter-stores.js'

type Refund = NonNullable<Store['refund']>

/** Resolves, one by one, as the store's refunds complete: the signal a test waits on instead of a sleep. */
function watchRefunds(store: Store): { next(): Promise<number>; readonly count: number } {
  const refund = store.refund?.bind(store) as Refund
  const done: number[] = []
  const waiting: ((units: number) => void)[] = []
  let count = 0
  store.refund = async (...args) => {
    const result = await refund(...args)
    const removed = result.units
    count++
    const waiter = waiting.shift()
    if (waiter) waiter(removed)
    else done.push(removed)
    return result
  }
  return {
    next: () =>
      done.length > 0 ? Promise.resolve(done.shift() as number) : new Promise((resolve) => waiting.push(resolve)),
    get count() {
      return count
    },
  }
}

/** A promise with its resolve, for a handler to wait on and a test to release. */
function gate(): { promise: Promise<void>; open(): void } {
  let open = () => {}
  const promise = new Promise<void>((resolve) => {
    open = resolve
  })
  return { promise, open }
}

const policy = () => definePolicy({ name: 'api', limit: 2, window: '1m' })
const statuses = (exchanges: readonly Exchange[]) => exchanges.map((e) => e.status)

describe('adapters: skipFailedRequests, skipSuccessfulRequests, requestWasSuccessful', () => {
  const stores = adapterStores()

  for (const flavour of flavours) {
    describe(flavour.name, () => {
      for (const kind of stores) {
        it(`skipFailedRequests: 500s give their units back, 200s count (${kind.name})`, async () => {
          const store = kind.make()
          const refunds = watchRefunds(store)
          const app = await flavour.build({ shared: { store, skipFailedRequests: true }, app: policy() })
          try {
            for (let i = 0; i < 5; i++) {
              const failed = await app.request('GET', '/status/500')
              expect(failed.status).to.equal(500)
              // Counted while it ran: the refund comes after the response.
              expect(failed.headers.ratelimit).to.equal('"api";r=1;t=60')
              expect(await refunds.next(), 'one unit given back').to.equal(1)
            }
            const ok = await app.request('GET', '/status/200')
            expect(ok.status).to.equal(200)
            expect(ok.headers.ratelimit, 'the 500s left the limit whole').to.equal('"api";r=1;t=60')
            const seen = [await app.request('GET', '/search'), await app.request('GET', '/search')]
            expect(statuses(seen), '200s count').to.deep.equal([200, 429])
            expect(seen[0]?.headers.ratelimit).to.equal('"api";r=0;t=60')
            expect(refunds.count).to.equal(5)
          } finally {
            await app.close()
          }
        })
      }

      it('skipSuccessfulRequests: 200s give their units back, 500s and 404s count', async () => {
        const store = memoryStore()
        const refunds = watchRefunds(store)
        const app = await flavour.build({ shared: { store, skipSuccessfulRequests: true }, app: policy() })
        try {
          for (let i = 0; i < 5; i++) {
            expect((await app.request('GET', '/status/200')).status).to.equal(200)
            await refunds.next()
          }
          expect((await app.request('GET', '/status/302')).status, 'a redirect succeeded').to.equal(302)
          await refunds.next()
          const seen = [
            await app.request('GET', '/status/500'),
            await app.request('GET', '/status/404'),
            await app.request('GET', '/status/200'),
          ]
          expect(statuses(seen)).to.deep.equal([500, 404, 429])
          expect(seen[0]?.headers.ratelimit).to.equal('"api";r=1;t=60')
          expect(refunds.count).to.equal(6)
        } finally {
          await app.close()
        }
      })

      it('requestWasSuccessful decides instead of the status, with the framework’s own arguments', async () => {
        const store = memoryStore()
        const refunds = watchRefunds(store)
        // Here a 500 is a success and anything else a failure: the 200s are given back, the 500s count.
        const requestWasSuccessful = sinon.spy(async (_req: unknown, res: unknown) => statusOf(res) === 500)
        const shared = { store, skipFailedRequests: true, requestWasSuccessful } as unknown as SharedOptions
        const app = await flavour.build({ shared, app: policy() })
        try {
          for (let i = 0; i < 3; i++) {
            expect((await app.request('GET', '/status/200')).status).to.equal(200)
            await refunds.next()
          }
          const seen = [
            await app.request('GET', '/status/500'),
            await app.request('GET', '/status/500'),
            await app.request('GET', '/status/200'),
          ]
          expect(statuses(seen)).to.deep.equal([500, 500, 429])
          expect(refunds.count).to.equal(3)
          // Called once per admitted request (not for the 429), once its response has finished.
          expect(requestWasSuccessful.callCount).to.equal(5)
          const [req, res] = requestWasSuccessful.firstCall.args as [Record<string, unknown>, Record<string, unknown>]
          if (flavour.name.startsWith('koa')) {
            expect(res, 'Koa: (ctx, ctx)').to.equal(req)
            expect(req).to.have.property('state')
          } else if (flavour.name.startsWith('express')) {
            expect(res.req, 'Express: (req, res)').to.equal(req)
            expect(res).to.have.property('statusCode', 200)
          } else {
            expect(res.request, 'Fastify: (request, reply)').to.equal(req)
            expect(res).to.have.property('raw')
          }
        } finally {
          await app.close()
        }
      })

      it('skipFailedRequests: a request the client abandons before the answer gives its units back', async () => {
        const store = memoryStore()
        const refunds = watchRefunds(store)
        const entered = gate()
        const release = gate()
        const app = await flavour.build({
          shared: { store, skipFailedRequests: true },
          app: definePolicy({ name: 'api', limit: 1, window: '1m' }),
          wait: () => {
            entered.open()
            return release.promise
          },
        })
        try {
          await app.abort('/wait', entered.promise)
          expect(await refunds.next(), 'refunded once the connection closed').to.equal(1)
          release.open()
          const after = await app.request('GET', '/search')
          expect(after.status).to.equal(200)
          expect(after.headers.ratelimit).to.equal('"api";r=0;t=60')
          expect(refunds.count).to.equal(1)
        } finally {
          release.open()
          await app.close()
        }
      })

      it('a refund the store fails is logged, not thrown, and delays no response; the request stays counted', async () => {
        const store = memoryStore()
        const failing = gate()
        const called: (() => void)[] = []
        const refund = sinon.stub(store, 'refund').callsFake(async () => {
          called.shift()?.()
          await failing.promise
          throw new Error('refund lost')
        })
        const warned = gate()
        const logger = { warn: sinon.spy((_message: string) => warned.open()) }
        const app = await flavour.build({ shared: { store, skipFailedRequests: true, logger }, app: policy() })
        try {
          const first = new Promise<void>((resolve) => called.push(resolve))
          // The refund hangs until released: the response is not waiting for it.
          expect((await app.request('GET', '/status/500')).status).to.equal(500)
          await first
          failing.open()
          await warned.promise
          expect(logger.warn.firstCall.args[0]).to.contain('refund lost')
          const second = new Promise<void>((resolve) => called.push(resolve))
          expect((await app.request('GET', '/status/500')).status).to.equal(500)
          await second
          expect((await app.request('GET', '/search')).status, 'both 500s still count').to.equal(429)
          expect(refund.callCount).to.equal(2)
        } finally {
          failing.open()
          await app.close()
        }
      })

      it('without the options, every request counts and nothing is refunded', async () => {
        const store = memoryStore()
        const refund = sinon.spy(store, 'refund')
        const app = await flavour.build({ shared: { store }, app: policy() })
        try {
          expect(
            statuses([await app.request('GET', '/status/500'), await app.request('GET', '/status/500')]),
          ).to.deep.equal([500, 500])
          expect((await app.request('GET', '/status/500')).status).to.equal(429)
          expect(refund.callCount).to.equal(0)
        } finally {
          await app.close()
        }
      })
    })
  }

  describe('invalid values throw the coded OptionError at construction, saying what to pass', () => {
    const bad: readonly [string, unknown, RegExp][] = [
      ['skipFailedRequests', 'yes', /invalid option `skipFailedRequests`: got "yes"; expected true or false/],
      ['skipSuccessfulRequests', 1, /invalid option `skipSuccessfulRequests`: got 1; expected true or false/],
      [
        'requestWasSuccessful',
        true,
        /invalid option `requestWasSuccessful`: got true; expected a function of \(req, res\)/,
      ],
    ]
    for (const [option, value, message] of bad) {
      it(`${option}: ${JSON.stringify(value)}`, async () => {
        // Bad on purpose: past the types, as from JavaScript or a config file.
        const options = { limit: 2, window: '1m', [option]: value } as never
        const coded = { code: 'ERR_FLEETLIMIT_OPTION', option }
        expect(() => expressRateLimit(options))
          .to.throw(message)
          .that.includes(coded)
        expect(() => koaRateLimit(options))
          .to.throw(message)
          .that.includes(coded)
        const app = Fastify()
        const error = await app.register(fastifyRateLimit, options).then(
          () => undefined,
          (e: unknown) => e,
        )
        expect(error).to.be.an('error').that.includes(coded)
        expect((error as Error).message).to.match(message)
      })
    }
  })
})

describe('skipFailedRequests with many stacked limiters', () => {
  it('Express: 12 limiters add one listener pair to a response, and each refunds its units', async () => {
    const warnings: Error[] = []
    const record = (warning: Error) => warnings.push(warning)
    process.on('warning', record)
    try {
      const store = memoryStore()
      const refunds = watchRefunds(store)
      const app = express()
      const listeners: number[] = []
      for (let i = 0; i < 12; i++) {
        app.use(expressRateLimit({ store, name: `p${i}`, limit: 5, window: '1m', skipFailedRequests: true }))
      }
      app.get('/', (_req, res) => {
        listeners.push(res.listenerCount('finish'), res.listenerCount('close'))
        res.status(500).end()
      })
      const bare = express()
      bare.get('/', (_req, res) => {
        listeners.push(res.listenerCount('finish'), res.listenerCount('close'))
        res.status(500).end()
      })
      expect((await request(app).get('/')).status).to.equal(500)
      await request(bare).get('/')
      const [finish, close, bareFinish, bareClose] = listeners as [number, number, number, number]
      expect([finish - bareFinish, close - bareClose], 'the limiters add one of each').to.deep.equal([1, 1])
      for (let i = 0; i < 12; i++) expect(await refunds.next()).to.equal(1)
      expect(warnings.map((w) => w.name)).to.deep.equal([])
    } finally {
      process.off('warning', record)
    }
  })
})

/** The status a framework's response object reports (Koa's context, Express's res, Fastify's reply). */
function statusOf(res: unknown): number {
  const { status, statusCode } = res as { status?: unknown; statusCode?: unknown }
  return Number(typeof statusCode === 'number' ? statusCode : status)
}
