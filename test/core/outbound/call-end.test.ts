import { expect } from 'chai'
import type { ReleaseResult, SettleResult } from '../../../packages/core/src/limiter/after-call.js'
import type { Decision } from '../../../packages/core/src/limiter/decision.js'
import type { CallCost } from '../../../packages/core/src/limiter/limiter-types.js'
import { createCallEnd, type ReadCost } from '../../../packages/core/src/outbound/call-end.js'
import { admittedDecision } from '../../support/decisions.js'

const base = admittedDecision()
/** An admission that holds in-flight slots (it has `extend`). */
const withSlots: Decision = { ...base, extend: async () => true }

/** A limiter whose release and settle log their calls; `released` and `settled` resolve on the first of each. */
function stubLimiter(settleFails?: Error) {
  const log: string[] = []
  let onRelease: () => void = () => {}
  const released = new Promise<void>((resolve) => {
    onRelease = resolve
  })
  let onSettle: () => void = () => {}
  const settled = new Promise<void>((resolve) => {
    onSettle = resolve
  })
  const limiter = {
    async release(decision: Decision): Promise<ReleaseResult> {
      log.push(`release ${decision === withSlots ? 'slots' : 'other'}`)
      onRelease()
      return {} as ReleaseResult
    },
    async settle(_decision: Decision, { cost }: { cost: CallCost }): Promise<SettleResult> {
      log.push(`settle ${JSON.stringify(cost)}`)
      onSettle()
      if (settleFails) throw settleFails
      return {} as SettleResult
    },
  }
  return { limiter, log, released, settled }
}

/** Reads the cost from the x-cost header. */
const fromHeader: ReadCost = (response) => Number(response.headers.get('x-cost'))

describe('outbound call end (outbound/call-end.ts)', () => {
  it('canEnd: an admission with slots needs a limiter that can release', () => {
    const { limiter } = stubLimiter()
    const ends = createCallEnd({ limiter, settle: undefined, onSettleError: () => {} })
    expect([ends.canEnd(base), ends.canEnd(withSlots)]).to.deep.equal([true, true])
    const noRelease = createCallEnd({ limiter: {}, settle: undefined, onSettleError: () => {} })
    expect([noRelease.canEnd(base), noRelease.canEnd(withSlots)]).to.deep.equal([true, false])
  })

  it('handOver without slots and without settle returns the response as it is and releases nothing', () => {
    const { limiter, log } = stubLimiter()
    const ends = createCallEnd({ limiter, settle: undefined, onSettleError: () => {} })
    const response = new Response('body')
    expect(ends.handOver(base, response, undefined)).to.equal(response)
    expect(log).to.deep.equal([])
  })

  it('handOver without slots, with settle: settles from a copy; with a signal, the body is read through a held one', async () => {
    const { limiter, log, settled } = stubLimiter()
    const ends = createCallEnd({ limiter, settle: fromHeader, onSettleError: () => {} })
    const unsignalled = new Response('first', { headers: { 'x-cost': '2' } })
    expect(ends.handOver(base, unsignalled, undefined)).to.equal(unsignalled)
    const response = new Response('body', { status: 201, headers: { 'x-cost': '3' } })
    const handed = ends.handOver(base, response, new AbortController().signal)
    // The original's branch is held, so that fetch's cancel on abort is refused (see call-end.ts).
    expect([handed === response, response.body?.locked, handed.body?.locked]).to.deep.equal([false, true, false])
    expect([handed.status, handed.headers.get('x-cost'), await handed.text()]).to.deep.equal([201, '3', 'body'])
    expect(await unsignalled.text()).to.equal('first')
    await settled
    expect(log).to.deep.equal(['settle 2', 'settle 3'])
  })

  it('handOver with slots releases them once the body is read and the settle is done, not before', async () => {
    const { limiter, log, released, settled } = stubLimiter()
    const ends = createCallEnd({ limiter, settle: fromHeader, onSettleError: () => {} })
    const handed = ends.handOver(withSlots, new Response('hello', { headers: { 'x-cost': '2' } }), undefined)
    // Settled, but the body is unread: the slots stay held.
    await settled
    expect(log).to.deep.equal(['settle 2'])
    expect(await handed.text()).to.equal('hello')
    await released
    expect(log).to.deep.equal(['settle 2', 'release slots'])
  })

  it('finish settles then releases, and returns the response to keep (held with settle and a signal)', async () => {
    const { limiter, log } = stubLimiter()
    const ends = createCallEnd({ limiter, settle: fromHeader, onSettleError: () => {} })
    const refused = new Response('slow down', { status: 429, headers: { 'x-cost': '1' } })
    const kept = await ends.finish(withSlots, refused, new AbortController().signal)
    expect(log).to.deep.equal(['settle 1', 'release slots'])
    expect([kept === refused, refused.body?.locked, kept.status, await kept.text()]).to.deep.equal([
      false,
      true,
      429,
      'slow down',
    ])
    await ends.failed(withSlots)
    await ends.failed(base)
    expect(log).to.deep.equal(['settle 1', 'release slots', 'release slots'])
    const plain = createCallEnd({ limiter, settle: undefined, onSettleError: () => {} })
    const unsettled = new Response('x', { status: 429 })
    expect(await plain.finish(base, unsettled, new AbortController().signal)).to.equal(unsettled)
    const unsignalled = new Response('x', { status: 429, headers: { 'x-cost': '1' } })
    expect(await ends.finish(base, unsignalled, undefined)).to.equal(unsignalled)
  })

  it('a failed settle goes to onSettleError with the copy, unless the caller aborted; nothing rejects', async () => {
    const failure = new Error('no cost')
    const { limiter, log } = stubLimiter(failure)
    const errors: unknown[] = []
    const ends = createCallEnd({ limiter, settle: fromHeader, onSettleError: (error) => errors.push(error) })
    await ends.finish(withSlots, new Response('x', { headers: { 'x-cost': '1' } }), undefined)
    expect(errors).to.deep.equal([failure])
    const aborted = AbortSignal.abort()
    await ends.finish(withSlots, new Response('x', { headers: { 'x-cost': '1' } }), aborted)
    expect(errors).to.deep.equal([failure])
    expect(log).to.deep.equal(['settle 1', 'release slots', 'settle 1', 'release slots'])
  })

  it('a failed release is swallowed: the slot is left to expire', async () => {
    let calls = 0
    const limiter = {
      release: async (): Promise<ReleaseResult> => {
        calls++
        throw new Error('store down')
      },
    }
    const ends = createCallEnd({ limiter, settle: undefined, onSettleError: () => {} })
    expect(await ends.failed(withSlots)).to.equal(undefined)
    const answer = new Response(null)
    expect(await ends.finish(withSlots, answer, undefined)).to.equal(answer)
    expect(calls).to.equal(2)
  })
})
