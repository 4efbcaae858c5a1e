import type { ValkeyGlideClient } from './glide-client.js'
import type { GlideHealth } from './glide-health.js'
import type { Subscriber } from './subscriptions.js'

/** What fleetlimit uses of GLIDE's client class: its factory, given a configuration. */
interface GlideFactory {
  createClient(configuration: object): Promise<ValkeyGlideClient>
}

// GLIDE's ProtocolVersion.RESP3 and PubSubChannelModes.Exact (the same in GlideClient and GlideClusterClient).
const RESP3 = 0
const EXACT = 0
// How long a SUBSCRIBE waits for the server's confirmation, and how often the subscriber is checked.
const SUBSCRIBE_TIMEOUT_MS = 5_000
const CHECK_MS = 1_000

/** The subscriber's connection: its id and its client address, both new after a reconnect (GLIDE keeps the name). */
const connectionOf = (sub: ValkeyGlideClient) =>
  sub.customCommand(['CLIENT', 'INFO'], { decoder: 1 }).then((info) => /^id=\d+ addr=\S+/.exec(String(info))?.[0] ?? '')

/**
 * GLIDE takes pub/sub subscriptions and their callback at client creation: the subscriber is a second client of the
 * same class made from the user's client's configuration (RESP3, which GLIDE's pub/sub needs), with this callback,
 * subscribing to more channels with `subscribe()`. Its socket does not keep the process alive, and it is closed
 * within CHECK_MS of the user's client.
 *
 * GLIDE subscribes again by itself after a reconnect and says nothing of it: so on a single server the subscriber's
 * connection (CLIENT INFO) is checked every CHECK_MS, and on any client messages may have been missed whenever the
 * user's client answers again after a failure; then it subscribes again (confirmed) and says so.
 */
export function glideSubscriber(
  client: ValkeyGlideClient,
  health: GlideHealth,
  cluster: boolean,
): Subscriber | undefined {
  const factory = client.constructor as Partial<GlideFactory>
  // GLIDE keeps the configuration the client was made with (private in its types, so read as a plain property).
  const configuration = (client as { config?: unknown }).config
  if (typeof factory.createClient !== 'function' || typeof configuration !== 'object' || configuration === null) {
    return undefined
  }
  if (health.closed()) return undefined
  const createClient = factory.createClient.bind(factory)
  const channels: string[] = []
  let deliver: (channel: string, message: string) => void = () => {}
  let missed: () => void = () => {}
  let opened: Promise<ValkeyGlideClient> | undefined

  function open(first: string): Promise<ValkeyGlideClient> {
    const made = createClient({
      ...(configuration as Record<string, unknown>),
      protocol: RESP3,
      lazyConnect: false,
      pubsubSubscriptions: {
        channelsAndPatterns: { [EXACT]: new Set([first]) },
        callback: (message: { channel: unknown; message: unknown }) =>
          deliver(String(message.channel), String(message.message)),
      },
    })
    return made.then(async (sub) => {
      ;(sub as { socket?: { unref?(): void } }).socket?.unref?.()
      // On a single server, the connection the subscriptions were last confirmed on; a cluster's has one per node.
      let confirmedOn = cluster ? undefined : await connectionOf(sub)
      let checking = false
      /**
       * After a reconnect (a new connection; on a cluster, the user's client answering again after a failure):
       * subscribes again, confirmed by the server, then says that messages may have been missed, once per
       * reconnect. A check that fails is made again at the next one.
       */
      const check = () => {
        if (checking) return
        checking = true
        const connection = cluster ? Promise.resolve(undefined) : connectionOf(sub)
        connection
          .then(async (now) => {
            if (!cluster && now === confirmedOn) return
            await sub.subscribe(channels, SUBSCRIBE_TIMEOUT_MS)
            confirmedOn = now
            missed()
          })
          .catch(() => {})
          .finally(() => {
            checking = false
          })
      }
      health.onRecovered(check)
      const timer = setInterval(() => {
        if (!health.closed()) {
          if (!cluster) check()
          return
        }
        clearInterval(timer)
        sub.close()
      }, CHECK_MS)
      timer.unref()
      return sub
    })
  }

  return {
    listen(to, onMissed) {
      deliver = to
      missed = onMissed
    },
    add(channel) {
      channels.push(channel)
      if (opened === undefined) {
        opened = open(channel)
        opened.catch(() => {})
      }
      // Confirmed by the server before it resolves, the first channel too (GLIDE may subscribe after connecting).
      return opened.then((sub) => sub.subscribe([channel], SUBSCRIBE_TIMEOUT_MS))
    },
  }
}
