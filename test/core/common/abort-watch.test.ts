import { getEventListeners } from 'node:events'
import { expect } from 'chai'
import { createAbortWatch } from '../../../packages/core/src/common/abort-watch.js'

const listenersOf = (signal: AbortSignal) => getEventListeners(signal, 'abort').length

describe('createAbortWatch', () => {
  it('runs every watcher of a signal once when it aborts, through one listener', () => {
    const watch = createAbortWatch()
    const controller = new AbortController()
    const ran: string[] = []
    watch(controller.signal, () => ran.push('a'))
    watch(controller.signal, () => ran.push('b'))
    expect(listenersOf(controller.signal)).to.equal(1)
    controller.abort()
    controller.abort()
    expect(ran).to.deep.equal(['a', 'b'])
    expect(listenersOf(controller.signal)).to.equal(0)
  })

  it('a watcher that stopped is not run; the listener goes with the last one', () => {
    const watch = createAbortWatch()
    const controller = new AbortController()
    const ran: string[] = []
    const stopA = watch(controller.signal, () => ran.push('a'))
    const stopB = watch(controller.signal, () => ran.push('b'))
    stopA()
    stopA()
    expect(listenersOf(controller.signal)).to.equal(1)
    stopB()
    expect(listenersOf(controller.signal)).to.equal(0)
    watch(controller.signal, () => ran.push('c'))
    controller.abort()
    expect(ran).to.deep.equal(['c'])
  })

  it('stopping after the abort, or a watcher that stops another during the abort, is harmless', () => {
    const watch = createAbortWatch()
    const controller = new AbortController()
    const ran: string[] = []
    let stopB = () => {}
    const stopA = watch(controller.signal, () => {
      ran.push('a')
      stopB()
    })
    stopB = watch(controller.signal, () => ran.push('b'))
    controller.abort()
    stopA()
    // The reactions were copied when the abort came: b still runs, once.
    expect(ran).to.deep.equal(['a', 'b'])
    // A new watch of the aborted signal gets a fresh entry (the old one was dropped), whose listener never fires.
    const late: string[] = []
    watch(controller.signal, () => late.push('late'))
    expect(late).to.deep.equal([])
  })
})
