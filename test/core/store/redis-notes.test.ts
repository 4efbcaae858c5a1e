import type { Store } from '@fleetlimit/core'
import { expect } from 'chai'
import { storeKinds, useStoreClients } from '../../support/stores.js'

// Store.readNote and writeNote: a short string beside a window key, replaced atomically, announced as a change.
for (const kind of storeKinds) {
  describe(`${kind.name}: notes`, () => {
    useStoreClients()
    const notes = (store: Store) => {
      const { readNote, writeNote } = store
      if (!readNote || !writeNote) throw new Error(`${kind.name} keeps no notes`)
      return { read: readNote.bind(store), write: writeNote.bind(store) }
    }

    it('reads no note, writes one, and reads it back with the store time', async () => {
      const { read, write } = notes(kind.make())
      const before = await read('api:{t}')
      expect(before.value).to.equal(undefined)
      expect(before.now).to.be.a('number')
      const written = await write('api:{t}', 'h 20', 10_000)
      expect([written.written, written.value]).to.deep.equal([true, 'h 20'])
      expect((await read('api:{t}')).value).to.equal('h 20')
      // The note is not a window: the key's window stays empty.
      expect((await kind.make().peek([{ key: 'api:{t}', limit: 1, windowMs: 1_000, cost: 1 }]))[0]?.remaining).to.equal(
        1,
      )
    })

    it('writes only over what it expects: a value, no note (null), or anything (undefined)', async () => {
      const { read, write } = notes(kind.make())
      expect((await write('k:{a}', 'one', 10_000, 'other')).written).to.equal(false)
      expect((await write('k:{a}', 'one', 10_000, null)).written).to.equal(true)
      const refused = await write('k:{a}', 'two', 10_000, null)
      expect([refused.written, refused.value]).to.deep.equal([false, 'one'])
      expect((await write('k:{a}', 'two', 10_000, 'one')).written).to.equal(true)
      expect((await write('k:{a}', 'three', 10_000)).written).to.equal(true)
      const removed = await write('k:{a}', undefined, 1, 'three')
      expect([removed.written, removed.value]).to.deep.equal([true, undefined])
      expect((await read('k:{a}')).value).to.equal(undefined)
    })

    it('lets a note expire after its ttl', async () => {
      const { read, write } = notes(kind.make())
      await write('k:{b}', 'short', 30)
      const { now } = await read('k:{b}')
      // The store's own clock says when the note is gone: read until it has passed the ttl.
      let state = await read('k:{b}')
      while (state.now < now + 40) state = await read('k:{b}')
      expect(state.value).to.equal(undefined)
    })

    it('announces a note written as a change of its key, to every listener on the store', async () => {
      const store = kind.make()
      const heard: (readonly string[] | undefined)[] = []
      let onHeard: () => void = () => {}
      const listener = (keys: readonly string[] | undefined) => {
        heard.push(keys)
        onHeard()
      }
      store.onKeyChange?.(listener)
      // A Redis store's subscription is confirmed by its first message: a reset announces too.
      const got = new Promise<void>((resolve) => {
        onHeard = resolve
      })
      for (let i = 0; heard.length === 0 && i < 50; i++) {
        await notes(store).write('k:{c}', `v${i}`, 10_000)
        await Promise.race([got, new Promise((resolve) => setImmediate(resolve))])
      }
      expect(heard[0]).to.deep.equal(['k:{c}'])
      // Kept alive by this test until here: the store holds listeners weakly.
      expect(listener).to.be.a('function')
    })
  })
}
