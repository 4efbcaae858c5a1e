// The memory store's notes (Store.readNote, writeNote): short strings beside window keys, each with its expiry.
import { StoreError } from '../../common/errors.js'
import type { NoteState, NoteWrite } from '../store.js'

/** The notes of one store, at most `maxKeys` of them; an expired note is dropped when next read, or when room is needed. */
export function createNotes(maxKeys: number, clock: () => number) {
  const notes = new Map<string, { readonly value: string; readonly until: number }>()

  function read(key: string, now: number): string | undefined {
    const note = notes.get(key)
    if (note === undefined) return undefined
    if (note.until > now) return note.value
    notes.delete(key)
    return undefined
  }

  return {
    read(key: string): NoteState {
      const now = clock()
      return { value: read(key, now), now }
    },
    write(key: string, value: string | undefined, ttlMs: number, expected?: string | null): NoteWrite {
      const now = clock()
      const current = read(key, now)
      const matches = expected === undefined || (expected === null ? current === undefined : current === expected)
      if (!matches) return { written: false, value: current, now }
      if (value === undefined) {
        notes.delete(key)
        return { written: true, value: undefined, now }
      }
      if (!notes.has(key) && notes.size >= maxKeys) {
        for (const [other, note] of notes) if (note.until <= now) notes.delete(other)
        if (notes.size >= maxKeys) throw new StoreError(`the memory store holds ${maxKeys} notes (maxKeys)`)
      }
      notes.set(key, { value, until: now + ttlMs })
      return { written: true, value, now }
    },
  }
}
