import type { Cluster, Redis } from 'ioredis'
import type { Target } from './args.js'
import { CliError } from './cli-error.js'

/** A connected ioredis client, and the servers a SCAN must visit (every master on a Cluster). */
export interface Connected {
  readonly client: Redis | Cluster
  readonly scanned: () => Redis[]
  /** The target as shown in output: the password left out. */
  readonly shown: string
  close(): void
}

/** How long the server gets to connect, and to answer each command: a frozen server fails the command, never hangs it. */
export const ANSWER_MS = 5_000

/**
 * Connects once, with no retry and no offline queue: an operator's command fails at once with one line that
 * says why (a bad URL, a refused connection, a wrong password), instead of waiting for a server that is not there.
 */
export async function connect(target: Target): Promise<Connected> {
  const { Redis, Cluster } = await import('ioredis').catch(() => {
    throw new CliError('the fleetlimit command line needs ioredis: npm install ioredis')
  })
  const urls =
    'url' in target ? [target.url] : target.seeds.map((seed) => (seed.includes('://') ? seed : `redis://${seed}`))
  const parsed = urls.map(parseUrl)
  const shown = parsed.map(hidePassword).join(', ')
  const once = {
    retryStrategy: () => null,
    reconnectOnError: () => false,
    enableOfflineQueue: false,
    connectTimeout: ANSWER_MS,
    commandTimeout: ANSWER_MS,
  } as const
  const credentials = parsed.find((url) => url.password !== '' || url.username !== '')
  const auth = {
    ...(credentials?.username && { username: decodeURIComponent(credentials.username) }),
    ...(credentials?.password && { password: decodeURIComponent(credentials.password) }),
    ...(parsed[0]?.protocol === 'rediss:' && { tls: {} }),
  }
  const client =
    'url' in target
      ? new Redis(target.url, { ...once, lazyConnect: true, maxRetriesPerRequest: 0 })
      : new Cluster(
          parsed.map((url) => ({ host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 6379) })),
          {
            lazyConnect: true,
            clusterRetryStrategy: () => null,
            enableOfflineQueue: false,
            redisOptions: { ...once, ...auth, maxRetriesPerRequest: 0 },
          },
        )
  // The first error is the one reported; later ones (the close that follows) are not news.
  let firstError: unknown
  const remember = (error: unknown) => {
    firstError ??= error
  }
  client.on('error', remember)
  client.on('node error', remember)
  let timer: ReturnType<typeof setTimeout> | undefined
  const silent = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ANSWER_MS / 1000} s`)), ANSWER_MS)
  })
  try {
    // A refused login can arrive after connect() resolved on some versions: a PING settles it. The ready check
    // of a server that accepts the connection but answers nothing is not bounded by commandTimeout: the race is.
    await Promise.race([client.connect().then(() => client.ping()), silent])
  } catch (error) {
    client.disconnect()
    throw new CliError(connectionFailure(firstError ?? error, shown))
  } finally {
    clearTimeout(timer)
  }
  return {
    client,
    scanned: () => ('nodes' in client ? (client as Cluster).nodes('master') : [client as Redis]),
    shown,
    close: () => client.disconnect(),
  }
}

function parseUrl(text: string): URL {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new CliError(`not a Redis URL: ${JSON.stringify(text)} (expected redis://[:password@]host:port)`, 2)
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
    throw new CliError(`not a Redis URL: ${JSON.stringify(hidePassword(url))} (expected redis:// or rediss://)`, 2)
  }
  return url
}

function hidePassword(url: URL): string {
  if (url.password === '') return url.href
  const copy = new URL(url.href)
  copy.password = '***'
  return copy.href
}

/** One line for a failed connection: what went wrong, in the operator's terms. */
function connectionFailure(error: unknown, shown: string): string {
  const message = error instanceof Error ? error.message : String(error)
  const code = (error as { code?: unknown } | undefined)?.code
  if (/^WRONGPASS|invalid password|invalid username-password/i.test(message)) {
    return `Redis at ${shown} refused the credentials: ${message}`
  }
  if (/^NOAUTH/.test(message)) {
    return `Redis at ${shown} needs a password: give it in the URL, redis://:password@host:port (${message})`
  }
  // ioredis's parser, on a reply that is not RESP: `Protocol error, got "H" as reply type byte. Please report this.`
  const stray = /^Protocol error, got "(.*)" as reply type byte/s.exec(message)
  if (stray) {
    const byte = JSON.stringify(stray[1])
    const like = stray[1] === 'H' ? ', as an HTTP server’s does' : ''
    return `the server at ${shown} is not a Redis server: its answer starts with ${byte}${like} (check the host and port)`
  }
  if (code === 'ECONNREFUSED') return `cannot connect to Redis at ${shown}: connection refused`
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `cannot connect to Redis at ${shown}: unknown host`
  return `cannot connect to Redis at ${shown}: ${message}`
}
