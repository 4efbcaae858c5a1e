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
}

/**
 * Runs scripts by `EVALSHA`, sending the source with `EVAL` only when the server answers `NOSCRIPT`
 * (after a restart or `SCRIPT FLUSH`); `EVAL` also caches it again. The client is used as given:
 * nothing is defined on it. With a Cluster, ioredis routes each call by its first key.
 */
export function createScriptRunner(client: ScriptClient): ScriptRunner {
  return {
    async run(script, keys, args) {
      try {
        return await client.evalsha(script.sha1, keys.length, ...keys, ...args)
      } catch (error) {
        if (!isNoScript(error)) throw error
        return await client.eval(script.lua, keys.length, ...keys, ...args)
      }
    },
  }
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT')
}
