// Error replies that say the server itself cannot serve now, whatever the key: what a breaker counts. Any other
// error reply (WRONGTYPE, NOPERM, OOM, READONLY, a script error) is about one key or one call, and fails that call
// alone: one tenant's broken key must not open the breaker on every other tenant.
const SERVER_STATES = new Set(['LOADING', 'MASTERDOWN', 'CLUSTERDOWN', 'TRYAGAIN', 'BUSY', 'NOAUTH', 'WRONGPASS'])

/**
 * True when an error from a store call says the server is unreachable or unable to serve (a lost connection, a
 * missed deadline, LOADING, MASTERDOWN, CLUSTERDOWN, TRYAGAIN, BUSY, a refused login); false for an error
 * reply about the call.
 */
export function isServerFailure(error: unknown): boolean {
  const reply = replyCode(error)
  return reply === undefined || SERVER_STATES.has(reply)
}

/** The code of a Redis error reply (its first word), or undefined when the error is not a reply from a server. */
export function replyCode(error: unknown): string | undefined {
  if (!(error instanceof Error) || error.name !== 'ReplyError') return undefined
  return /^[A-Z]+/.exec(error.message)?.[0] ?? 'ERR'
}

/**
 * An error reply as ioredis makes one (an Error named 'ReplyError' whose message starts with the reply's code): what
 * fleetlimit makes of node-redis's error replies and of an error the sliding-log script reports for one call.
 */
export class ReplyError extends Error {
  override name = 'ReplyError'
}
