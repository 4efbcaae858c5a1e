import { expect } from 'chai'
import { createCallGate } from '../../../packages/core/src/store/call-gate.js'

describe('the call gate: calls in flight to one server', () => {
  it('lets maxInFlight calls through at once, then hands each freed slot to the longest waiter', async () => {
    const gate = createCallGate(2)
    expect(gate.enter()).to.equal(undefined)
    expect(gate.enter()).to.equal(undefined)
    const order: number[] = []
    const waiting = [1, 2, 3].map((n) => (gate.enter() as Promise<void>).then(() => order.push(n)))
    expect(gate).to.include({ inFlight: 2, waiting: 3 })
    gate.leave()
    await waiting[0]
    expect(order).to.deep.equal([1])
    expect(gate).to.include({ inFlight: 2, waiting: 2 })
    gate.leave()
    gate.leave()
    await Promise.all(waiting)
    expect(order).to.deep.equal([1, 2, 3])
    gate.leave()
    gate.leave()
    expect(gate).to.include({ inFlight: 0, waiting: 0 })
    expect(gate.enter(), 'a free slot is taken at once').to.equal(undefined)
  })

  it('serves 100,000 waiters first-in first-out with a bounded queue array', async () => {
    const gate = createCallGate(1)
    gate.enter()
    let served = 0
    let inOrder = true
    const all = Array.from({ length: 100_000 }, (_, i) =>
      (gate.enter() as Promise<void>).then(() => {
        if (served++ !== i) inOrder = false
        gate.leave()
      }),
    )
    gate.leave()
    await Promise.all(all)
    expect({ served, inOrder }).to.deep.equal({ served: 100_000, inOrder: true })
    expect(gate).to.include({ inFlight: 0, waiting: 0 })
  })
})
