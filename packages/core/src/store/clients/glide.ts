import { once } from '../../common/once.js'
import type { ClientAdapter } from './client-adapter.js'
import type { Candidate, GlideCommandOptions, ValkeyGlideClient } from './glide-client.js'
import { type GlideHealth, glideHealth } from './glide-health.js'
import { glideSlotMap } from './glide-slot-map.js'
import { glideSubscriber } from './glide-subscriber.js'
import { evalArgs } from './node-redis-commands.js'
import { asIoredisError } from './reply-errors.js'
import { createSubscriptions } from './subscriptions.js'

// GLIDE's Decoder.Bytes and Decoder.String, given on every call so that the client's defaultDecoder changes nothing.
const BYTES = Object.freeze({ decoder: 0 })
const STRING = Object.freeze({ decoder: 1 })

/**
 * GLIDE through `customCommand`: EVAL and EVALSHA as the runner sends them (so its EVALSHA, NOSCRIPT and EVAL flow is
 * the same on every client), routed by GLIDE by the first key on a cluster. GLIDE reports neither connection events
 * nor its slot map: see glide-health.ts and glide-slot-map.ts for what stands in for them.
 */
export function glideAdapter(client: ValkeyGlideClient): ClientAdapter {
  // Only a GlideClusterClient has the *WithRoute commands.
  const cluster = typeof (client as unknown as Candidate).fcallWithRoute === 'function'
  const health: GlideHealth = glideHealth(client)
  const slots = cluster ? glideSlotMap(client, health) : undefined
  const send = async (args: (string | Buffer)[], options: GlideCommandOptions) => {
    const given = performance.now()
    try {
      const reply = await client.customCommand(args, options)
      health.answered(performance.now() - given)
      return reply
    } catch (error) {
      const reply = asIoredisError(error)
      if (reply === error) health.failed(error)
      else health.answered(performance.now() - given)
      throw reply
    }
  }
  return {
    library: 'glide',
    cluster,
    evaluate: (command, script, keys, args, binary) =>
      send(evalArgs(command, script, keys, args), binary ? BYTES : STRING),
    del: async (key) => {
      await send(['DEL', key], STRING)
    },
    serverOf: slots ? slots.serverOf : () => '',
    watch: once(() => health.watch()),
    publish: async (channel, message) => {
      await send(['PUBLISH', channel, message], STRING)
    },
    subscribe: createSubscriptions(() => glideSubscriber(client, health, cluster)),
  }
}
