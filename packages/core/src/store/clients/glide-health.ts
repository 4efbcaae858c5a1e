import { createWeakSignal } from '../../common/weak-signal.js'
import type { ConnectionWatch } from './client-adapter.js'
import type { ValkeyGlideClient } from './glide-client.js'

/** What GLIDE's adapter knows of its connection: GLIDE reconnects by itself and says nothing of it. */
export interface GlideHealth {
  /** A command failed without a reply from the server (a timeout, a lost connection): pings until one is answered. */
  failed(error: unknown): void
  /** A command was answered (a reply, or an error reply) `tookMs` after it was given. */
  answered(tookMs: number): void
  /** True once the user closed the client. */
  closed(): boolean
  /** Calls `listener` (held strongly: fleetlimit's own) each time the client answers again after a failure. */
  onRecovered(listener: () => void): void
  watch(): ConnectionWatch
}

// How long to wait between two PINGs that failed (each is bounded by the client's requestTimeout, 250 ms by default).
const PING_PAUSE_MS = 100
// An answer this late says the connection stalled (GLIDE held the command while it reconnected) and is back.
const STALLED_MS = 50

/**
 * GLIDE has no connection events: it reconnects in the background, and a command to a lost server is answered
 * once it is back (GLIDE sends it again) or fails by the client's requestTimeout. So a command that fails without
 * a reply starts a PING every PING_PAUSE_MS until one is answered, or any command is: that answer is the client's
 * 'ready' (open breakers probe at once). Meanwhile commands are sent, and the breaker counts their missed deadlines.
 * An outage shorter than requestTimeout fails no command: there an answer that came STALLED_MS late or later is
 * the sign of life that makes open breakers probe (without moving readySince, as a slow server's answer would).
 */
export function glideHealth(client: ValkeyGlideClient): GlideHealth {
  // GLIDE's own flag, set by close(): protected in its types, so read as a plain property.
  const closed = () => (client as { isClosed?: unknown }).isClosed === true
  let readyAt: number = performance.now()
  let last: unknown
  let pinging = false
  const readiness = createWeakSignal<[]>()
  const recovered: (() => void)[] = []

  function ready() {
    pinging = false
    readyAt = performance.now()
    last = undefined
    for (const listener of recovered) listener()
    readiness.emit()
  }

  async function pingUntilAnswered() {
    pinging = true
    while (pinging && !closed()) {
      try {
        await client.customCommand(['PING'])
        if (pinging) ready()
      } catch (error) {
        last = error
        await new Promise((resolve) => setTimeout(resolve, PING_PAUSE_MS).unref())
      }
    }
  }

  return {
    failed(error) {
      last = error
      if (!pinging && !closed()) void pingUntilAnswered()
    },
    answered(tookMs) {
      if (pinging) ready()
      else if (tookMs >= STALLED_MS) readiness.emit()
    },
    closed,
    onRecovered: (listener) => recovered.push(listener),
    watch: () => ({
      connected: () => !closed(),
      // GLIDE's createClient resolves once connected (lazyConnect aside): ready since the watch began.
      readySince: () => (pinging || closed() ? undefined : readyAt),
      lastError: () => (closed() ? new Error('the GLIDE client is closed') : last),
      onReady: readiness.add,
    }),
  }
}
