import { adaptClient, type RedisStoreClient } from './clients/adapt-client.js'
import type { ScriptArgument } from './clients/client-adapter.js'
import { createRefusalExplainer } from './script-refusal.js'
import { replyCode } from './server-failure.js'

/** A Lua script as generated from `lua/*.lua`: its source and the sha1 that `SCRIPT LOAD` returns. */
export interface LuaScript {
  readonly name: string
  readonly sha1: string
  readonly lua: string
}

/**
 * A script call: `server`, where the caller knows it (the client's name of the server its keys are on, as the
 * adapter's serverOf gives it), saves looking it up again.
 */
export interface ScriptRunner {
  run(script: LuaScript, keys: readonly string[], args: readonly ScriptArgument[], server?: string): Promise<unknown>
  /** The same, for a script that replies with one binary string: the reply as a Buffer. */
  runBuffer(
    script: LuaScript,
    keys: readonly string[],
    args: readonly ScriptArgument[],
    server?: string,
  ): Promise<Buffer>
}

/**
 * Runs scripts by `EVALSHA`, sending the source with `EVAL` when the server answers `NOSCRIPT` (after a
 * restart, a `SCRIPT FLUSH`, a failover, or a cluster's slot moved to another master). The client (ioredis or
 * node-redis, see store/clients/) is used as given: nothing is defined on it. On a cluster, each call is
 * routed by its first key.
 *
 * A connection runs its commands in order, and `EVAL` caches a script before it runs it: so the first call of a
 * script on a server sends `EVAL`, and every call sent after it sends `EVALSHA`, even before that `EVAL` is
 * answered. A cold burst sends the script's text once per server, in the same round trip as its calls.
 */
export function createScriptRunner(client: RedisStoreClient): ScriptRunner {
  // The client's one adapter, which redisStore shares.
  const adapted = adaptClient(client)
  if (!adapted) throw new TypeError('createScriptRunner: not an ioredis, node-redis or GLIDE client')
  const adapter = adapted
  // The scripts whose EVAL has been sent, by server and sha1 (a cluster's masters each cache theirs).
  const sent = new Set<string>()
  // The EVAL of each script on each server until it is answered: the calls sent behind it meet its refusal.
  const loading = new Map<string, Promise<unknown>>()
  type Keys = readonly string[]
  type Args = readonly ScriptArgument[]

  const explain = createRefusalExplainer(adapter)
  const evalSource = (script: LuaScript, keys: Keys, args: Args, binary: boolean) =>
    adapter.evaluate('EVAL', script.lua, keys, args, binary)
  const idOf = (script: LuaScript, keys: Keys, server = adapter.serverOf(keys[0] ?? '')) =>
    server === '' ? script.sha1 : `${server} ${script.sha1}`

  function load(id: string, script: LuaScript, keys: Keys, args: Args, binary: boolean): Promise<unknown> {
    const reply = evalSource(script, keys, args, binary)
    sent.add(id)
    loading.set(id, reply)
    const settled = (cached: boolean) => () => {
      if (loading.get(id) !== reply) return
      loading.delete(id)
      // A refused EVAL (out of memory, a lost connection) may have cached nothing: the next call sends it again.
      if (!cached) sent.delete(id)
    }
    reply.then(settled(true), settled(false))
    return reply
  }

  // A script's parts are passed as they are: a call builds nothing that the client does not send.
  async function run(
    script: LuaScript,
    keys: Keys,
    args: Args,
    binary: boolean,
    server: string | undefined,
    again = false,
  ): Promise<unknown> {
    const id = idOf(script, keys, server)
    if (!sent.has(id)) {
      // Awaited, as an EVALSHA is: calls answered in one read resolve in the order the server answered them.
      try {
        return await load(id, script, keys, args, binary)
      } catch (error) {
        throw await explain(error)
      }
    }
    const pending = loading.get(id)
    try {
      return await adapter.evaluate('EVALSHA', script.sha1, keys, args, binary)
    } catch (error) {
      if (!isNoScript(error)) throw await explain(error)
      if (pending) {
        // Sent behind that EVAL on the same connection: the server kept no script because it refused the EVAL
        // (out of memory, say), as it would refuse this call's own. An EVAL lost with its connection is no answer.
        const refusal = await pending.then(
          () => undefined,
          (reason: unknown) => ({ reason }),
        )
        if (refusal && replyCode(refusal.reason) !== undefined) throw await explain(refusal.reason)
      }
      // A server that lost its scripts: one call sends EVAL and the others EVALSHA behind it (once; then EVAL).
      if (!loading.has(id)) sent.delete(id)
      return again
        ? await evalSource(script, keys, args, binary).catch(async (refused: unknown) =>
            Promise.reject(await explain(refused)),
          )
        : run(script, keys, args, binary, server, true)
    }
  }
  return {
    run: (script, keys, args, server) => run(script, keys, args, false, server),
    runBuffer: (script, keys, args, server) => run(script, keys, args, true, server) as Promise<Buffer>,
  }
}

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('NOSCRIPT')
}
