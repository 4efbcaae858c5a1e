import type { Cluster, Redis } from 'ioredis'

/** A Lua script as generated from `lua/*.lua`: its source and the sha1 that `SCRIPT LOAD` returns. */
export interface LuaScript {
  readonly name: string
  readonly sha1: string
  readonly lua: string
}

export type ScriptClient = Redis | Cluster

export interface ScriptRunner {
  run(script: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown>
  /** The same, for a script that replies with one binary string: the reply as a Buffer. */
  runBuffer(script: LuaScript, keys: readonly string[], args: readonly (string | number)[]): Promise<Buffer>
}

/**
 * Runs scripts by `EVALSHA`, sending the source with `EVAL` when the server answers `NOSCRIPT` (after a
 * restart or `SCRIPT FLUSH`); `EVAL` also caches it again. Until a script has run once, calls send it with
 * `EVAL` at once: the first burst of a new process costs one round trip, not a NOSCRIPT and a second one.
 * The client is used as given: nothing is defined on it. With a Cluster, ioredis routes each call by its
 * first key.
 */
export function createScriptRunner(client: ScriptClient): ScriptRunner {
  const loaded = new Set<string>()
  type Send = (command: 'EVAL' | 'EVALSHA', ...args: (string | number)[]) => Promise<unknown>
  const send: Send = (command, ...args) => client.call(command, ...args)
  const sendBuffer: Send = (command, ...args) => client.callBuffer(command, ...args)
  async function run(script: LuaScript, keys: readonly string[], args: readonly (string | number)[], via: Send) {
    if (!loaded.has(script.sha1)) {
      const reply = await via('EVAL', script.lua, keys.length, ...keys, ...args)
      loaded.add(script.sha1)
      return reply
    }
    try {
      return await via('EVALSHA', script.sha1, keys.length, ...keys, ...args)
    } catch (error) {
      if (!isNoScript(error)) throw error
      return await via('EVAL', script.lua, keys.length, ...keys, ...args)
    }
  }
  return {
    run: (script, keys, args) => run(script, keys, args, send),
    runBuffer: async (script, keys, args) => (await run(script, keys, args, sendBuffer)) as Buffer,
  }
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT')
}
