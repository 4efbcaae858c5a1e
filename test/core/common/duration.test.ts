import { expect } from 'chai'
import { parseDuration } from '../../../packages/core/src/common/duration.js'

describe('parseDuration', () => {
  it('accepts ms numbers and unit strings', () => {
    expect(parseDuration(250, 'w')).to.equal(250)
    expect(parseDuration('250ms', 'w')).to.equal(250)
    expect(parseDuration('10s', 'w')).to.equal(10_000)
    expect(parseDuration('1.1s', 'w')).to.equal(1_100)
    expect(parseDuration('1m', 'w')).to.equal(60_000)
    expect(parseDuration('1h', 'w')).to.equal(3_600_000)
    expect(parseDuration('1d', 'w')).to.equal(86_400_000)
  })
})
