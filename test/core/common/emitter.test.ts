import { expect } from 'chai'
import sinon from 'sinon'
import { createEmitter } from '../../../packages/core/src/common/emitter.js'

type Events = { tick: [n: number]; tock: [] }

describe('createEmitter', () => {
  it('calls the listeners of an event in the order they came, with its arguments', () => {
    const emitter = createEmitter<Events>()
    const heard: string[] = []
    emitter.on('tick', (n) => heard.push(`first ${n}`))
    emitter.on('tick', (n) => heard.push(`second ${n}`))
    emitter.on('tock', () => heard.push('tock'))
    emitter.emit('tick', 7)
    expect(heard).to.deep.equal(['first 7', 'second 7'])
  })

  it('on returns its own unsubscribe; has says whether anyone listens', () => {
    const emitter = createEmitter<Events>()
    expect(emitter.has('tick')).to.equal(false)
    const heard: number[] = []
    const off = emitter.on('tick', (n) => heard.push(n))
    expect(emitter.has('tick')).to.equal(true)
    expect(emitter.has('tock')).to.equal(false)
    emitter.emit('tick', 1)
    off()
    off()
    emitter.emit('tick', 2)
    expect(heard).to.deep.equal([1])
    expect(emitter.has('tick')).to.equal(false)
  })

  it('tells the first listener of an event and the last one leaving, once each', () => {
    const seen: string[] = []
    const emitter = createEmitter<Events>(
      (event) => seen.push(`first ${String(event)}`),
      (event) => seen.push(`last ${String(event)}`),
    )
    const offA = emitter.on('tick', () => {})
    const offB = emitter.on('tick', () => {})
    offA()
    offB()
    offB()
    emitter.on('tick', () => {})
    expect(seen).to.deep.equal(['first tick', 'last tick', 'first tick'])
  })

  it('a throwing listener neither stops the others nor throws from emit: its error surfaces in a microtask', async () => {
    const emitter = createEmitter<Events>()
    const boom = new Error('listener bug')
    const queued = sinon.stub(globalThis, 'queueMicrotask')
    try {
      const after = sinon.fake()
      emitter.on('tock', () => {
        throw boom
      })
      emitter.on('tock', after)
      expect(() => emitter.emit('tock')).to.not.throw()
      expect(after.callCount).to.equal(1)
      expect(queued.callCount).to.equal(1)
      expect(() => (queued.firstCall.args[0] as () => void)()).to.throw(boom)
    } finally {
      queued.restore()
    }
  })
})
