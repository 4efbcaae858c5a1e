import { expect } from 'chai'
import sinon from 'sinon'
import { createOutagePrinter } from '../../../../packages/core/src/store/clients/outage-printer.js'

describe('createOutagePrinter', () => {
  let printed: sinon.SinonStub
  beforeEach(() => {
    printed = sinon.stub(console, 'error')
  })
  afterEach(() => printed.restore())

  const lines = () => printed.getCalls().map((call) => call.args.join(' '))

  it('prints one line when an outage starts and one when the client is ready, counting the errors between', () => {
    const printer = createOutagePrinter({ listenerCount: () => 1 }, 'node-redis')
    printer.ready()
    const refused = Object.assign(new Error(''), { code: 'ECONNREFUSED' })
    printer.error(refused)
    printer.error(new Error('again'))
    printer.error(new Error('and again'))
    printer.ready()
    printer.error(new Error('first line\n   second line'))
    printer.ready()
    expect(lines()).to.deep.equal([
      '[fleetlimit] node-redis client error: ECONNREFUSED (further errors are counted until it is ready)',
      '[fleetlimit] node-redis client ready again, after 3 errors',
      '[fleetlimit] node-redis client error: first line second line (further errors are counted until it is ready)',
      '[fleetlimit] node-redis client ready again, after 1 error',
    ])
  })

  it('prints nothing when the user listens for errors too (ours is then not the only listener)', () => {
    const printer = createOutagePrinter({ listenerCount: () => 2 }, 'ioredis')
    printer.error(new Error('down'))
    printer.ready()
    expect(lines()).to.deep.equal([])
  })

  it('a thrown non-Error reads as its string, and one without message or code by its name', () => {
    const printer = createOutagePrinter({ listenerCount: () => 1 }, 'glide')
    printer.error('socket hang up')
    printer.ready()
    printer.error(new TypeError(''))
    expect(lines()).to.deep.equal([
      '[fleetlimit] glide client error: socket hang up (further errors are counted until it is ready)',
      '[fleetlimit] glide client ready again, after 1 error',
      '[fleetlimit] glide client error: TypeError (further errors are counted until it is ready)',
    ])
  })
})
