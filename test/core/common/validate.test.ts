import { expect } from 'chai'
import {
  checkBoolean,
  checkInteger,
  checkOneOf,
  checkOptionNames,
  isPlainObject,
  msText,
  optionalFunction,
  optionNames,
} from '../../../packages/core/src/common/validate.js'
import { optionErrorOf } from '../../support/option-error.js'

describe('validate', () => {
  it('msText says milliseconds in the largest unit that says them exactly', () => {
    expect(msText(86_400_000)).to.equal('1d')
    expect(msText(7_200_000)).to.equal('2h')
    expect(msText(60_000)).to.equal('1m')
    expect(msText(90_000)).to.equal('90s')
    expect(msText(1_500)).to.equal('1500ms')
  })

  it('checkOptionNames returns the options, or names the first unknown one and what is accepted', () => {
    const options = { limit: 1, window: '1s' }
    expect(checkOptionNames(options, 'createRateLimiter', ['limit', 'window'])).to.equal(options)
    const unknown = optionErrorOf(() => checkOptionNames({ limit: 1, lmit: 2 }, 'createRateLimiter', ['limit']))
    expect(unknown).to.include({ option: 'createRateLimiter.lmit', value: 2 })
    expect(unknown.message).to.equal(
      'fleetlimit: unknown option `createRateLimiter.lmit` (got 2): accepted options are limit.',
    )
    for (const value of [null, [], 'limit']) {
      expect(optionErrorOf(() => checkOptionNames(value, 'where', [])).message).to.match(
        /expected an options object\.$/,
      )
    }
  })

  it('checkOptionNames gives a familiar name from another limiter its hint in our terms, where ours is accepted', () => {
    const accepted = ['limit', 'window', 'blockFor']
    expect(optionErrorOf(() => checkOptionNames({ windowMs: 60_000 }, 'o', accepted)).message).to.include(
      "`window: '1m'`",
    )
    expect(optionErrorOf(() => checkOptionNames({ duration: 60 }, 'o', accepted)).message).to.include("`window: '60s'`")
    expect(optionErrorOf(() => checkOptionNames({ blockDuration: 30 }, 'o', accepted)).message).to.include(
      "`blockFor: '30s'`",
    )
    // Where `window` is not accepted, the error lists what is instead.
    expect(optionErrorOf(() => checkOptionNames({ duration: 60 }, 'o', ['limit'])).message).to.equal(
      'fleetlimit: unknown option `o.duration` (got 60): accepted options are limit.',
    )
  })

  it('isPlainObject accepts literals and null-prototype objects only', () => {
    expect(isPlainObject({})).to.equal(true)
    expect(isPlainObject(Object.create(null))).to.equal(true)
    expect(isPlainObject(new Map())).to.equal(false)
    expect(isPlainObject([])).to.equal(false)
    expect(isPlainObject(null)).to.equal(false)
    expect(isPlainObject(new (class Options {})())).to.equal(false)
  })

  it('checkInteger, checkOneOf, checkBoolean and optionalFunction return a good value and name a bad one', () => {
    expect(checkInteger(3, 'n', 1, 3)).to.equal(3)
    for (const bad of [0, 4, 1.5, '2', Number.NaN]) {
      expect(optionErrorOf(() => checkInteger(bad, 'n', 1, 3)).message).to.match(
        /^fleetlimit: invalid option `n`: got .*; expected a whole number from 1 to 3\.$/,
      )
    }
    expect(checkOneOf('b', 'mode', ['a', 'b'])).to.equal('b')
    expect(optionErrorOf(() => checkOneOf('c', 'mode', ['a', 'b'])).message).to.equal(
      'fleetlimit: invalid option `mode`: got "c"; expected one of "a", "b".',
    )
    expect(checkBoolean(false, 'flag')).to.equal(false)
    expect(optionErrorOf(() => checkBoolean(0, 'flag')).message).to.equal(
      'fleetlimit: invalid option `flag`: got 0; expected true or false.',
    )
    const fn = () => 1
    expect(optionalFunction(fn, 'f')).to.equal(fn)
    expect(optionalFunction(undefined, 'f')).to.equal(undefined)
    expect(optionErrorOf(() => optionalFunction('x' as unknown as () => 1, 'f')).message).to.equal(
      'fleetlimit: invalid option `f`: got "x"; expected a function.',
    )
  })

  it('optionNames lists the names of an options record', () => {
    expect(optionNames<{ a?: number; b: string }>({ a: true, b: true })).to.deep.equal(['a', 'b'])
  })
})
