import { expect } from 'chai'
import { createNotes } from '../../../../packages/core/src/store/memory/notes.js'

describe('memory/notes: the memory store’s notes', () => {
  let now = 1_000
  const clock = () => now

  it('keeps a note until its ttl, with the clock’s time', () => {
    const notes = createNotes(10, clock)
    expect(notes.read('k')).to.deep.equal({ value: undefined, now: 1_000 })
    expect(notes.write('k', 'v', 100)).to.deep.equal({ written: true, value: 'v', now: 1_000 })
    now = 1_099
    expect(notes.read('k')).to.deep.equal({ value: 'v', now: 1_099 })
    now = 1_100
    expect(notes.read('k').value).to.equal(undefined)
  })

  it('writes over what it expects only: a value, no note (null), or anything (undefined)', () => {
    const notes = createNotes(10, clock)
    expect(notes.write('k', 'a', 100, 'b').written).to.equal(false)
    expect(notes.write('k', 'a', 100, null).written).to.equal(true)
    expect(notes.write('k', 'b', 100, null)).to.deep.include({ written: false, value: 'a' })
    expect(notes.write('k', 'b', 100, 'a').written).to.equal(true)
    expect(notes.write('k', undefined, 1, 'b')).to.deep.include({ written: true, value: undefined })
    expect(notes.read('k').value).to.equal(undefined)
  })

  it('holds at most maxKeys notes: an expired one makes room, else the write is refused with a StoreError', () => {
    const notes = createNotes(2, clock)
    notes.write('a', '1', 10)
    notes.write('b', '2', 1_000)
    expect(() => notes.write('c', '3', 10)).to.throw('holds 2 notes')
    now += 10
    expect(notes.write('c', '3', 10).written).to.equal(true)
    // A note in place is replaced whatever the count.
    expect(notes.write('b', '4', 10).written).to.equal(true)
  })
})
