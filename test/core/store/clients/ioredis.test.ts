import { EventEmitter } from 'node:events'
import { expect } from 'chai'
import { ioredisAdapter, isIoredis } from '../../../../packages/core/src/store/clients/ioredis.js'

/** A stand-in for an ioredis client: its status and retry count set by the test, its events emitted by it. */
function stubClient(status: string) {
  const events = new EventEmitter()
  const client = {
    status,
    retryAttempts: 0,
    call: async () => 'OK',
    callBuffer: async () => null,
    del: async () => 0,
    on: (event: string, listener: (...args: unknown[]) => void) => events.on(event, listener),
    listenerCount: (event: string) => events.listenerCount(event),
  }
  return { client, emit: (event: string, ...args: unknown[]) => events.emit(event, ...args) }
}

describe('ioredisAdapter', () => {
  it('takes an object with call, callBuffer, del and a status for ioredis, and nothing less', () => {
    expect(isIoredis(stubClient('ready').client)).to.equal(true)
    expect(isIoredis({ call() {}, callBuffer() {}, status: 'ready' })).to.equal(false)
  })

  it('is connected while ready, and while the first connection is made: a call then waits for it', () => {
    const { client } = stubClient('wait')
    const watch = ioredisAdapter(client).watch()
    expect(watch.connected()).to.equal(true)
    expect(watch.readySince()).to.equal(Number.POSITIVE_INFINITY)
    client.status = 'connecting'
    expect(watch.connected()).to.equal(true)
  })

  it('is not connected while ioredis retries a lost connection, its attempts included, until it is ready', () => {
    const { client, emit } = stubClient('ready')
    const watch = ioredisAdapter(client).watch()
    emit('ready')
    expect(watch.connected()).to.equal(true)
    const readyAt = watch.readySince()
    expect(readyAt).to.be.a('number')
    client.status = 'reconnecting'
    client.retryAttempts = 1
    expect(watch.connected()).to.equal(false)
    // An attempt to connect again: a command sent now would wait in ioredis's offline queue for it.
    client.status = 'connecting'
    expect(watch.connected()).to.equal(false)
    expect(watch.readySince()).to.equal(undefined)
    client.status = 'connect'
    expect(watch.connected()).to.equal(false)
    client.status = 'ready'
    client.retryAttempts = 0
    emit('ready')
    expect(watch.connected()).to.equal(true)
    expect(watch.readySince()).to.be.at.least(readyAt as number)
  })

  it('is not connected once the client has ended', () => {
    const { client } = stubClient('end')
    expect(ioredisAdapter(client).watch().connected()).to.equal(false)
  })
})
