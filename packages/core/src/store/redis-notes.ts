// A Redis store's notes (Store.readNote, writeNote): short strings beside window keys, by lua/note.lua.
import type { createScriptRunner } from './script-runner.js'
import { noteScript } from './scripts.generated.js'
import { unexpectedReply } from './sliding-log-call.js'
import type { NoteWrite, Store } from './store.js'

/**
 * The Redis key of a window key's note: in the window key's slot, in a shape no window key has (a window key's
 * route holds no ':').
 */
export const noteKey = (prefix: string, key: string) => `${prefix}:${key}:note:1`

/** Store.readNote and writeNote, by lua/note.lua; a note written is announced as a change of its window key. */
export function noteCalls(
  runner: ReturnType<typeof createScriptRunner>,
  prefix: string,
  announce: (keys: readonly string[]) => Promise<void>,
): Pick<Store, 'readNote' | 'writeNote'> {
  return {
    readNote: async (key) => noteOf(await runner.run(noteScript, [noteKey(prefix, key)], ['r'])),
    writeNote: async (key, value, ttlMs, expected) => {
      const expects = expected === undefined ? '*' : expected === null ? '' : expected
      const args = ['w', expects, value ?? '', Math.max(1, Math.ceil(ttlMs))]
      const write = noteOf(await runner.run(noteScript, [noteKey(prefix, key)], args))
      if (write.written) await announce([key])
      return write
    },
  }
}

/** lua/note.lua's reply. */
function noteOf(reply: unknown): NoteWrite {
  const [written, value, now] = Array.isArray(reply) ? reply : []
  if (typeof now !== 'number' || (typeof value !== 'string' && value !== null)) {
    throw unexpectedReply(reply, noteScript)
  }
  return { written: written === 1, value: value ?? undefined, now }
}
