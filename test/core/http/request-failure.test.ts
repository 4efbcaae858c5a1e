import { OptionError, StoreError } from '@fleetlimit/core'
import { expect } from 'chai'
import { createRequestFailure } from '../../../packages/core/src/http/request-failure.js'

/** A warner that keeps what it was told, by kind, once each (as createWarnOnce does). */
function recordWarnings() {
  const told = new Map<string, string>()
  const warnOnce = (kind: string, message: () => string) => {
    if (!told.has(kind)) told.set(kind, message())
  }
  return { told, warnOnce }
}

const REQ = { url: '/x' }

describe('core/http/request-failure: what a request the limiter could not decide on gets', () => {
  it('fleetlimit’s own error, no onError: a 500 problem+json naming its code and option, logged once per kind', async () => {
    const { told, warnOnce } = recordWarnings()
    const failed = createRequestFailure<typeof REQ>(undefined, warnOnce)
    const error = new OptionError('tenant(req)', 7, 'a string')
    const first = await failed(REQ, error)
    await failed(REQ, new OptionError('tenant(req)', 8, 'a string'))
    const body = JSON.stringify({
      type: 'about:blank',
      title: 'Internal Server Error',
      status: 500,
      detail: 'The rate limiter could not decide on this request: invalid `tenant(req)`.',
      code: 'ERR_FLEETLIMIT_OPTION',
    })
    expect(first).to.deep.equal({
      action: 'respond',
      status: 500,
      headers: { 'content-type': 'application/problem+json', 'content-length': String(body.length) },
      body,
      decision: undefined,
    })
    expect([...told.keys()]).to.deep.equal(['request-error ERR_FLEETLIMIT_OPTION tenant(req)'])
    expect(told.get('request-error ERR_FLEETLIMIT_OPTION tenant(req)')).to.match(
      /^a request could not be rate limited, so it was answered 500 \(application\/problem\+json\): invalid option `tenant\(req\)`: got 7/,
    )
  })

  it('an error of the user’s own, no onError: thrown to the framework, unlogged', async () => {
    const { told, warnOnce } = recordWarnings()
    const failed = createRequestFailure<typeof REQ>(undefined, warnOnce)
    const mine = new Error('no API key')
    let thrown: unknown
    await failed(REQ, mine).catch((error: unknown) => {
      thrown = error
    })
    expect(thrown).to.equal(mine)
    expect(told.size).to.equal(0)
  })

  it('onError decides, with the error and the request: allow is through with nothing, throw throws', async () => {
    const { told, warnOnce } = recordWarnings()
    const seen: unknown[] = []
    const error = new StoreError('down')
    const allow = createRequestFailure<typeof REQ>((e, req) => {
      seen.push(e, req)
      return 'allow'
    }, warnOnce)
    expect(await allow(REQ, error)).to.deep.equal({ action: 'next', headers: {}, decision: undefined })
    expect(seen).to.deep.equal([error, REQ])
    let thrown: unknown
    await createRequestFailure<typeof REQ>(async () => 'throw' as const, warnOnce)(REQ, error).catch((e: unknown) => {
      thrown = e
    })
    expect(thrown).to.equal(error)
    // onError chose: nothing is logged.
    expect(told.size).to.equal(0)
  })

  it('onError returning what is not an action: the default, said once', async () => {
    const { told, warnOnce } = recordWarnings()
    const failed = createRequestFailure<typeof REQ>(() => 'ok' as never, warnOnce)
    const outcome = await failed(REQ, new OptionError('cost(req)', 0, 'a whole number'))
    await failed(REQ, new OptionError('cost(req)', 0, 'a whole number'))
    expect(outcome).to.include({ action: 'respond', status: 500 })
    expect([...told]).to.deep.equal([
      [
        'on-error-result',
        `onError(error, req) returned "ok", not 'respond', 'allow' or 'throw': such requests get the default.`,
      ],
    ])
  })
})
