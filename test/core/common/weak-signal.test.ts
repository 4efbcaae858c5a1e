import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { expect } from 'chai'
import { createWeakSignal } from '../../../packages/core/src/common/weak-signal.js'

/** A full garbage collection, without --expose-gc on the command line: the flag set now exposes `gc` to a new context. */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc')
  ;(runInNewContext('gc') as () => void)()
}

describe('createWeakSignal', () => {
  it('calls every live listener with the arguments, and says it was used once one was added', () => {
    const signal = createWeakSignal<[string, number]>()
    expect(signal.used).to.equal(false)
    const heard: string[] = []
    const a = (text: string, n: number) => heard.push(`a ${text} ${n}`)
    const b = (text: string, n: number) => heard.push(`b ${text} ${n}`)
    signal.add(a)
    signal.add(b)
    expect(signal.used).to.equal(true)
    signal.emit('x', 1)
    expect(heard).to.deep.equal(['a x 1', 'b x 1'])
  })

  it('holds its listeners weakly: a collected one is dropped, not called', async () => {
    const signal = createWeakSignal<[]>()
    let calls = 0
    let ref: WeakRef<object> | undefined
    ;(() => {
      const listener = () => {
        calls++
      }
      ref = new WeakRef(listener)
      signal.add(listener)
    })()
    // A WeakRef's target survives the turn it was made in; then a full collection takes the listener.
    await new Promise((resolve) => setImmediate(resolve))
    collectGarbage()
    signal.emit()
    expect(ref?.deref()).to.equal(undefined)
    expect(calls).to.equal(0)
    expect(signal.used).to.equal(true)
  })
})
