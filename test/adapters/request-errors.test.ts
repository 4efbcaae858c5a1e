import { definePolicy, isFleetlimitError, type Logger, memoryStore, type OptionError } from '@fleetlimit/core'
import { expect } from 'chai'
import sinon from 'sinon'
import { comparable, type Exchange, flavours, type SharedOptions } from '../support/adapter-harness.js'

type WithHeaders = { readonly headers: Record<string, string | string[] | undefined> }

const api = definePolicy({ name: 'api', limit: 10, window: '1m' })
/** The tenant is the API key; the cost is the x-cost header. */
const byKey = {
  tenant: (req: WithHeaders) => req.headers['x-api-key'],
  cost: (req: WithHeaders) => Number(req.headers['x-cost'] ?? 1),
}
const options = (extra: object) => ({ store: memoryStore(), ...byKey, ...extra }) as unknown as SharedOptions
const warnings = (logger: Logger) => (logger.warn as sinon.SinonSpy).getCalls().map((call) => String(call.args[0]))

const problem = (detail: string) =>
  `{"type":"about:blank","title":"Internal Server Error","status":500,"detail":"${detail}","code":"ERR_FLEETLIMIT_OPTION"}`
const NO_TENANT = problem('The rate limiter could not decide on this request: invalid `tenant(req)`.')
const BAD_COST = problem('The rate limiter could not decide on this request: invalid `cost(req)`.')

describe('adapters: a request that cannot be decided on', () => {
  for (const flavour of flavours) {
    describe(flavour.name, () => {
      it('by default answers 500 problem+json, with no stack, and logs each kind once', async () => {
        const logger: Logger = { warn: sinon.fake() }
        const app = await flavour.build({ shared: options({ logger }), route: api })
        try {
          for (let i = 0; i < 2; i++) {
            const missing = await app.request('GET', '/search')
            expect(missing.status).to.equal(500)
            expect(missing.headers['content-type']).to.equal('application/problem+json')
            expect(missing.headers['content-length']).to.equal(String(Buffer.byteLength(NO_TENANT)))
            expect(missing.body).to.equal(NO_TENANT)
            expect(Object.keys(missing.headers).filter((name) => name.includes('ratelimit'))).to.deep.equal([])
          }
          const tooDear = await app.request('GET', '/search', { 'x-api-key': 'k1', 'x-cost': '50' })
          expect(tooDear.status).to.equal(500)
          expect(tooDear.body).to.equal(BAD_COST)
          await app.request('GET', '/search', { 'x-api-key': 'k1', 'x-cost': '11' })
          const fine = await app.request('GET', '/search', { 'x-api-key': 'k1', 'x-cost': '3' })
          expect(fine.status).to.equal(200)
          expect(fine.headers.ratelimit, 'the failed requests counted nothing').to.equal('"api";r=7;t=60')
          expect(warnings(logger)).to.deep.equal([
            "fleetlimit: a request could not be rate limited, so it was answered 500 (application/problem+json): invalid option `tenant(req)`: got undefined; expected a string: the tenant of this request (for requests without one, such as a missing API key, return a shared tenant like 'anonymous', or skip them with skip(req)). Later requests failing the same way get the same answer, unlogged; pass onError(error, req) to decide what they get.",
            'fleetlimit: a request could not be rate limited, so it was answered 500 (application/problem+json): invalid option `cost(req)`: got 50; expected a whole number from 1 to 10. Later requests failing the same way get the same answer, unlogged; pass onError(error, req) to decide what they get.',
          ])
        } finally {
          await app.close()
        }
      })

      it("onError(error, req) decides: 'allow' lets it through uncounted, and nothing is logged", async () => {
        const logger: Logger = { warn: sinon.fake() }
        const onError = sinon.spy((_error: unknown, req: WithHeaders) =>
          req.headers['x-then'] === 'allow' ? 'allow' : undefined,
        )
        const app = await flavour.build({ shared: options({ logger, onError }), route: api })
        try {
          const allowed = await app.request('GET', '/search', { 'x-then': 'allow' })
          expect(allowed.status).to.equal(200)
          expect(allowed.body).to.equal('{"ok":true}')
          expect(allowed.headers.ratelimit).to.equal(undefined)
          const byDefault = await app.request('GET', '/search')
          expect(byDefault.body, 'undefined: the default').to.equal(NO_TENANT)
          expect(onError.callCount).to.equal(2)
          const [error, req] = onError.firstCall.args
          expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION')).to.equal(true)
          expect((error as OptionError).option).to.equal('tenant(req)')
          expect(req.headers['x-then'], 'the framework’s request').to.equal('allow')
          expect(warnings(logger)).to.deep.equal([])
        } finally {
          await app.close()
        }
      })

      it("onError 'throw' hands the error to the framework's error handling", async () => {
        const app = await flavour.build({ shared: options({ onError: () => 'throw' }), route: api })
        try {
          const thrown = await app.request('GET', '/search')
          expect(thrown.status).to.equal(500)
          expect(thrown.headers['content-type']).not.to.equal('application/problem+json')
          expect(thrown.body).not.to.equal(NO_TENANT)
        } finally {
          await app.close()
        }
      })

      it("an error of the user's own function goes to the framework as it is, with its status", async () => {
        const unauthorized = () => {
          throw Object.assign(new Error('no API key'), { status: 401, statusCode: 401, expose: true })
        }
        const app = await flavour.build({ shared: options({ tenant: unauthorized }), route: api })
        try {
          expect((await app.request('GET', '/search')).status).to.equal(401)
        } finally {
          await app.close()
        }
      })

      it('an onError result that is no action gets the default, and is warned about once', async () => {
        const logger: Logger = { warn: sinon.fake() }
        const app = await flavour.build({ shared: options({ logger, onError: () => 'ignore' }), route: api })
        try {
          for (let i = 0; i < 2; i++) expect((await app.request('GET', '/search')).body).to.equal(NO_TENANT)
          expect(warnings(logger)).to.deep.equal([
            "fleetlimit: onError(error, req) returned \"ignore\", not 'respond', 'allow' or 'throw': such requests get the default.",
          ])
        } finally {
          await app.close()
        }
      })
    })
  }

  it('the 500 is byte for byte alike on every framework', async () => {
    const transcripts: Exchange[][] = []
    for (const flavour of flavours) {
      const app = await flavour.build({ shared: options({ logger: { warn() {} } }), route: api })
      transcripts.push([
        comparable(await app.request('GET', '/search')),
        comparable(await app.request('GET', '/search', { 'x-api-key': 'k', 'x-cost': '12' })),
      ])
      await app.close()
    }
    const [reference, ...others] = transcripts
    expect(reference?.map((e) => [e.status, e.body])).to.deep.equal([
      [500, NO_TENANT],
      [500, BAD_COST],
    ])
    for (const [i, transcript] of others.entries()) {
      expect(transcript, (flavours[i + 1] as { name: string }).name).to.deep.equal(reference)
    }
  })
})
