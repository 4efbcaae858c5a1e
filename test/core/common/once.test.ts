import { expect } from 'chai'
import { once } from '../../../packages/core/src/common/once.js'

describe('once', () => {
  it('makes the value on the first call only, and returns it ever after', () => {
    let made = 0
    const value = once(() => ({ n: ++made }))
    expect(made).to.equal(0)
    const first = value()
    expect(value()).to.equal(first)
    expect(first).to.deep.equal({ n: 1 })
    expect(made).to.equal(1)
  })

  it('keeps an undefined value made once', () => {
    let made = 0
    const value = once(() => {
      made++
      return undefined
    })
    expect(value()).to.equal(undefined)
    expect(value()).to.equal(undefined)
    expect(made).to.equal(1)
  })
})
