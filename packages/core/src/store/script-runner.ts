import { adaptClient, type RedisStoreClient, type ScriptArgument } from './script-client.js'

/** A Lua script as generated from `lua/*.lua`: its source and the sha1 that `SCRIPT LOAD` returns. */
export interface LuaScript {
  readonly name: string
  readonly sha1: string
  readonly lua: string
}

export interface ScriptRunner {
  run(script: LuaScript, keys: readonly string[], args: readonly ScriptArgument[]): Promise<unknown>
  /** The same, for a script that replies with one binary string: the reply as a Buffer. */
  runBuffer(script: LuaScript, keys: readonly string[], args: readonly ScriptArgument[]): Promise<Buffer>
}

/**
 * Runs scripts by `EVALSHA`, sending the source with `EVAL` when the server answers `NOSCRIPT` (after a
 * restart or `SCRIPT FLUSH`); `EVAL` also caches it again. Until a script has run once, calls send it with
 * `EVAL` at once: the first burst of a new process costs one round trip, not a NOSCRIPT and a second one.
 * The client (ioredis or node-redis, see script-client.ts) is used as given: nothing is defined on it. On a
 * cluster, each call is routed by its first key.
 *
 * node-redis writes a command only once the socket has room for it (ioredis buffers every command at once), so
 * a burst of EVALs, each with a script's 24 KB, would drain one per turn of the event loop and miss its deadlines.
 * There, one EVAL of a script is in flight per server, and the calls that come meanwhile send EVALSHA: queued
 * behind that EVAL on the same connection, they reach the server once it has the script (EVAL caches a script
 * before it runs it), in the same round trip.
 */
export function createScriptRunner(client: RedisStoreClient): ScriptRunner {
  // The client's one adapter, which redisStore shares.
  const adapted = adaptClient(client)
  if (!adapted) throw new TypeError('createScriptRunner: not an ioredis or node-redis client')
  const adapter = adapted
  const oneLoadAtATime = adapter.library === 'node-redis'
  // The scripts known to be cached, by sha1; with node-redis, by server and sha1 (a cluster's masters each cache theirs).
  const loaded = new Set<string>()
  // node-redis only: the EVAL in flight of each script on each server.
  const loading = new Map<string, Promise<unknown>>()
  type Call = readonly [script: LuaScript, keys: readonly string[], args: readonly ScriptArgument[], binary: boolean]

  const evalSha = ([script, keys, args, binary]: Call) => adapter.evaluate('EVALSHA', script.sha1, keys, args, binary)
  const evalSource = ([script, keys, args, binary]: Call) => adapter.evaluate('EVAL', script.lua, keys, args, binary)
  const idOf = ([script, keys]: Call) => {
    const server = oneLoadAtATime ? adapter.serverOf(keys[0] ?? '') : ''
    return server === '' ? script.sha1 : `${server} ${script.sha1}`
  }

  async function load(id: string, call: Call) {
    const reply = evalSource(call)
    if (oneLoadAtATime) {
      loading.set(id, reply)
      const done = () => loading.delete(id)
      reply.then(done, done)
    }
    const value = await reply
    loaded.add(id)
    return value
  }

  async function run(call: Call, again = false): Promise<unknown> {
    const id = idOf(call)
    const pending = loading.get(id)
    if (!loaded.has(id) && !pending) return load(id, call)
    try {
      return await evalSha(call)
    } catch (error) {
      if (!isNoScript(error)) throw error
      if (!oneLoadAtATime) return await evalSource(call)
      if (pending) {
        // Queued behind that EVAL on the same connection: the server kept no script because it refused the EVAL
        // (out of memory, say), as it would refuse this call's own.
        const refusal = await pending.then(
          () => undefined,
          (reason: unknown) => ({ reason }),
        )
        if (refusal) throw refusal.reason
      }
      // A restarted server: one call loads the script again and the others send EVALSHA behind it (once; then EVAL).
      loaded.delete(id)
      return again ? await evalSource(call) : run(call, true)
    }
  }
  return {
    run: (script, keys, args) => run([script, keys, args, false]),
    runBuffer: (script, keys, args) => run([script, keys, args, true]) as Promise<Buffer>,
  }
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT')
}
