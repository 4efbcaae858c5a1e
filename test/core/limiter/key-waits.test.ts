import { expect } from 'chai'
import type { Window } from '../../../packages/core/src/limiter/degraded.js'
import { createKeyWaits } from '../../../packages/core/src/limiter/key-waits.js'
import { definePolicy } from '../../../packages/core/src/limiter/policy.js'

const inFlight = definePolicy({ name: 'jobs', concurrency: 2 })
const windowed = definePolicy({ name: 'api', limit: 10, window: '1s' })
const slotWindow = (key: string): Window => ({ policy: inFlight, key, limit: 2 })

describe('createKeyWaits', () => {
  it('wakes exactly the queues that wait on a freed slot key', () => {
    const woken: string[] = []
    const waits = createKeyWaits((queue) => woken.push(queue))
    waits.add('q1', [slotWindow('s1'), { policy: windowed, key: 'w1', limit: 10 }])
    waits.add('q2', [slotWindow('s1'), slotWindow('s2')])
    waits.add('q3', [{ policy: windowed, key: 'w1', limit: 10 }])
    waits.freed(['s2'])
    expect(woken).to.deep.equal(['q2'])
    waits.freed(['s1', 'w1'])
    expect(woken).to.deep.equal(['q2', 'q1', 'q2'])
  })

  it('wakes every waiting queue when messages may have been missed', () => {
    const woken: string[] = []
    const waits = createKeyWaits((queue) => woken.push(queue))
    waits.add('q1', [slotWindow('s1')])
    waits.add('q2', [slotWindow('s2')])
    waits.freed(undefined)
    expect(woken).to.deep.equal(['q1', 'q2'])
  })

  it('a forgotten queue is woken no more; adding a queue twice keeps its first keys', () => {
    const woken: string[] = []
    const waits = createKeyWaits((queue) => woken.push(queue))
    waits.add('q1', [slotWindow('s1')])
    waits.add('q1', [slotWindow('s2')])
    waits.freed(['s2'])
    expect(woken).to.deep.equal([])
    waits.forget('q1')
    waits.forget('q1')
    waits.freed(['s1'])
    waits.freed(undefined)
    expect(woken).to.deep.equal([])
  })

  it('wakes every queue that waits on a key units were given back on, once each, slot keys or not', () => {
    const woken: string[] = []
    const waits = createKeyWaits((queue) => woken.push(queue))
    waits.add('q1', [slotWindow('s1'), { policy: windowed, key: 'w1', limit: 10 }])
    waits.add('q2', [{ policy: windowed, key: 'w1', limit: 10 }])
    waits.add('q3', [{ policy: windowed, key: 'w2', limit: 10 }])
    waits.given(['w1', 's1'])
    expect(woken).to.deep.equal(['q1', 'q2'])
    waits.forget('q2')
    waits.given(['w1'])
    expect(woken).to.deep.equal(['q1', 'q2', 'q1'])
  })

  it('hears of units given back from the store once a first queue waits, and wakes every queue on `undefined`', () => {
    const woken: string[] = []
    const listeners: Record<string, ((keys: readonly string[] | undefined) => void)[]> = {}
    const listen = (name: string) => (listener: (keys: readonly string[] | undefined) => void) => {
      listeners[name] = [...(listeners[name] ?? []), listener]
    }
    const store = { onUnitsBack: listen('unitsBack'), onSlotFree: listen('slotFree'), onKeyChange: listen('keyChange') }
    const waits = createKeyWaits((queue) => woken.push(queue), store, false)
    // No in-flight policy: no slot messages; nothing waits yet: no subscription.
    expect(Object.keys(listeners)).to.deep.equal([])
    waits.add('q1', [{ policy: windowed, key: 'w1', limit: 10 }])
    waits.add('q2', [{ policy: windowed, key: 'w2', limit: 10 }])
    expect(Object.keys(listeners)).to.deep.equal(['unitsBack'])
    expect(listeners.unitsBack).to.have.length(1)
    listeners.unitsBack?.[0]?.(['w2'])
    listeners.unitsBack?.[0]?.(undefined)
    expect(woken).to.deep.equal(['q2', 'q1', 'q2'])
  })

  it('with in-flight policies, hears of slots freed and of resets at once', () => {
    const names: string[] = []
    const listen = (name: string) => () => {
      names.push(name)
    }
    createKeyWaits(
      () => {},
      { onUnitsBack: listen('unitsBack'), onSlotFree: listen('slotFree'), onKeyChange: listen('keyChange') },
      true,
    )
    expect(names).to.deep.equal(['slotFree', 'keyChange'])
  })
})
