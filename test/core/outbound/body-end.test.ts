import { expect } from 'chai'
import { onBodyEnd } from '../../../packages/core/src/outbound/body-end.js'

/** A body that gives `chunks` one per read, counting the reads asked of it, then ends (or fails with `failure`). */
function source(chunks: string[], failure?: Error) {
  const state = { pulls: 0, cancelled: undefined as unknown }
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        state.pulls++
        const next = chunks.shift()
        if (next !== undefined) controller.enqueue(new TextEncoder().encode(next))
        else if (failure) controller.error(failure)
        else controller.close()
      },
      cancel(reason) {
        state.cancelled = reason
      },
    },
    { highWaterMark: 0 },
  )
  return { stream, state }
}

describe('onBodyEnd', () => {
  it('ends once the body has been read to its end, and not before; the caller reads every byte', async () => {
    const { stream } = source(['he', 'llo'])
    const ends: string[] = []
    const response = onBodyEnd(new Response(stream, { status: 201, headers: { 'x-a': '1' } }), () => ends.push('end'))
    expect(ends).to.deep.equal([])
    expect([response.status, response.headers.get('x-a')]).to.deep.equal([201, '1'])
    expect(await response.text()).to.equal('hello')
    expect(ends).to.deep.equal(['end'])
  })

  it('reads nothing ahead of the caller', async () => {
    const { stream, state } = source(['a', 'b'])
    const response = onBodyEnd(new Response(stream), () => {})
    await new Promise((resolve) => setImmediate(resolve))
    expect(state.pulls).to.equal(0)
    const reader = (response.body as ReadableStream<Uint8Array>).getReader()
    await reader.read()
    expect(state.pulls).to.equal(1)
  })

  it('ends once when the body is cancelled, passing the reason on to the upstream’s body', async () => {
    const { stream, state } = source(['a', 'b'])
    let ends = 0
    const response = onBodyEnd(new Response(stream), () => ends++)
    const reason = new Error('not interested')
    await response.body?.cancel(reason)
    expect(ends).to.equal(1)
    expect(state.cancelled).to.equal(reason)
    await response.body?.cancel().catch(() => {})
    expect(ends).to.equal(1)
  })

  it('ends when reading the body fails, and the caller gets the failure', async () => {
    const failure = new Error('connection reset')
    const { stream } = source(['a'], failure)
    let ends = 0
    const response = onBodyEnd(new Response(stream), () => ends++)
    expect(await response.text().catch((e: unknown) => e)).to.equal(failure)
    expect(ends).to.equal(1)
  })

  it('ends at once for a response without a body, which it returns as it is', () => {
    for (const original of [new Response(null, { status: 204 }), new Response(null, { status: 200 })]) {
      let ends = 0
      expect(onBodyEnd(original, () => ends++)).to.equal(original)
      expect(ends).to.equal(1)
    }
  })

  it('keeps the url, redirected and type of the upstream’s response', async () => {
    const original = new Response('x')
    Object.defineProperties(original, {
      url: { value: 'https://upstream.test/after-redirect' },
      redirected: { value: true },
      type: { value: 'basic' },
    })
    const response = onBodyEnd(original, () => {})
    expect([response.url, response.redirected, response.type]).to.deep.equal([
      'https://upstream.test/after-redirect',
      true,
      'basic',
    ])
    expect(await response.text()).to.equal('x')
  })
})
