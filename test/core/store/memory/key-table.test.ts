import { isFleetlimitError } from '@fleetlimit/core'
import { expect } from 'chai'
import { createKeyTable, type EntrySlot, isIdle } from '../../../../packages/core/src/store/memory/key-table.js'
import type { WindowRequest } from '../../../../packages/core/src/store/store.js'
import { thrown } from '../../../support/thrown.js'

const log = (key: string): WindowRequest => ({ key, limit: 5, windowMs: 1_000, cost: 1 })
const bucketed = (key: string): WindowRequest => ({ key, limit: 5, windowMs: 1_000, cost: 1, buckets: 4 })
const slots = (key: string): WindowRequest => ({ key, limit: 5, windowMs: 1_000, cost: 1, slots: true })

describe('memory store key table (store/memory/key-table.ts)', () => {
  it('makes one entry per key of the kind asked, and finds the same one again', () => {
    const table = createKeyTable(10)
    const [a, b, c] = table.entriesOf([log('a'), bucketed('b'), slots('c')], true)
    expect(a?.log).to.not.equal(undefined)
    expect(b?.counter).to.not.equal(undefined)
    expect(b).to.include({ buckets: 4, windowMs: 1_000, dropped: false })
    expect(c?.slots).to.not.equal(undefined)
    expect([...table.entries.keys()]).to.deep.equal(['a', 'b', 'c'])
    expect(table.entriesOf([log('a')], true)[0]).to.equal(a)
  })

  it('takes the window length of the latest request, and a bucketed entry its bucket count', () => {
    const table = createKeyTable(10)
    const [entry] = table.entriesOf([bucketed('b')], true)
    table.entriesOf([{ ...bucketed('b'), windowMs: 2_000, buckets: 8 }], true)
    expect(entry).to.include({ windowMs: 2_000, buckets: 8 })
  })

  it('a peek of an unknown key gets a detached entry and adds no key', () => {
    const table = createKeyTable(1)
    table.entriesOf([log('a')], true)
    const [entry] = table.entriesOf([log('b')], false)
    expect(entry?.dropped).to.equal(true)
    expect(table.entries.size).to.equal(1)
  })

  it('refuses a call whose new keys pass maxKeys, adding none of them', () => {
    const table = createKeyTable(2)
    table.entriesOf([log('a')], true)
    const error = thrown(() => table.entriesOf([log('b'), log('c')], true))
    expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE'), String(error)).to.equal(true)
    expect((error as Error).message).to.equal(
      'fleetlimit: memory store full: it holds maxKeys (2) keys with live windows, so a new key is refused; raise maxKeys or use redisStore',
    )
    expect([...table.entries.keys()]).to.deep.equal(['a'])
    // A known key needs no room.
    expect(table.entriesOf([log('a')], true)).to.have.length(1)
  })

  it('refuses a call of another kind on a key, whole, naming both kinds', () => {
    const table = createKeyTable(10)
    table.entriesOf([bucketed('k')], true)
    const error = thrown(() => table.entriesOf([log('new'), log('k')], true))
    expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE'), String(error)).to.equal(true)
    expect((error as Error).message).to.match(
      /holds a bucketed window; a call of another kind of window cannot use it$/,
    )
    expect(table.entries.has('new')).to.equal(false)
    const slotError = thrown(() => table.entriesOf([slots('k')], false))
    expect((slotError as Error).message).to.match(/holds a bucketed window;/)
    const logError = thrown(() => table.logEntryOf(log('k'), true, undefined))
    expect((logError as Error).message).to.match(/holds a bucketed window;/)
  })

  it('logEntryOf keeps the entry in the slot while the table holds it, and looks it up again once dropped', () => {
    const table = createKeyTable(10)
    const slot: EntrySlot = { entry: undefined }
    const first = table.logEntryOf(log('k'), true, slot)
    expect(slot.entry).to.equal(first)
    expect(table.entries.get('k')).to.equal(first)
    expect(table.logEntryOf({ ...log('other'), windowMs: 3_000 }, true, slot)).to.equal(first)
    expect(first.windowMs).to.equal(3_000)
    table.drop('k', first)
    expect(first.dropped).to.equal(true)
    expect(table.entries.has('k')).to.equal(false)
    const second = table.logEntryOf(log('k'), true, slot)
    expect(second).to.not.equal(first)
    expect(slot.entry).to.equal(second)
  })

  it('logEntryOf for a peek of an unknown key adds nothing; for a new key past maxKeys it throws', () => {
    const table = createKeyTable(1)
    expect(table.logEntryOf(log('a'), false, undefined).dropped).to.equal(true)
    expect(table.entries.size).to.equal(0)
    table.logEntryOf(log('a'), true, undefined)
    const error = thrown(() => table.logEntryOf(log('b'), true, undefined))
    expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE'), String(error)).to.equal(true)
    expect([...table.entries.keys()]).to.deep.equal(['a'])
  })

  it('isIdle: an entry is idle once nothing of it is inside its window', () => {
    const table = createKeyTable(10)
    const [logEntry, slotEntry] = table.entriesOf([log('a'), slots('b')], true)
    logEntry?.log?.add(100, 2)
    slotEntry?.slots?.take(1, 600)
    expect(isIdle(logEntry as never, 1_099)).to.equal(false)
    expect(isIdle(logEntry as never, 1_100)).to.equal(true)
    expect(isIdle(slotEntry as never, 599)).to.equal(false)
    expect(isIdle(slotEntry as never, 600)).to.equal(true)
  })
})
