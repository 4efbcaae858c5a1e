import { ReplyError } from '../server-failure.js'

// A Redis error reply starts with its code in capitals (ERR, WRONGTYPE, NOSCRIPT, LOADING, …); no error node-redis
// or Node makes for a connection does. The message says it even when a bundler renamed node-redis's classes.
const REPLY_CODE = /^[A-Z][A-Z0-9_]+ /
// The server closes the connection after this reply: a lost connection, not an answer about the call. node-redis
// meets it when it sends a queued command behind a refused AUTH (ioredis waits for 'ready').
const PROTOCOL_ERROR = /^ERR Protocol error/

/**
 * node-redis's error replies (ErrorReply and its SimpleError, BlobError) and GLIDE's (a RequestError) renamed as
 * ioredis names them; anything else (a closed socket, a closed client, a timeout) stays as it is.
 */
export function asIoredisError(error: unknown): unknown {
  if (!(error instanceof Error) || error.name === 'ReplyError' || PROTOCOL_ERROR.test(error.message)) return error
  if (error.name === 'RequestError') return glideReply(error)
  if (!isErrorReply(error) && !REPLY_CODE.test(error.message)) return error
  return new ReplyError(error.message, { cause: error })
}

function isErrorReply(error: Error): boolean {
  for (
    let proto = Object.getPrototypeOf(error);
    proto && proto !== Error.prototype;
    proto = Object.getPrototypeOf(proto)
  ) {
    if ((proto as { constructor?: { name?: string } }).constructor?.name === 'ErrorReply') return true
  }
  return false
}

// GLIDE (through redis-rs) rewrites an error reply: a code it knows becomes its kind ("An error was signalled by the
// server: - NoScriptError: No matching script."), any other keeps its code before a colon ("WRONGTYPE: Operation…").
const GLIDE_KNOWN = /^An error was signalled by the server: - (\w+): ([\s\S]*)$/
const GLIDE_OTHER = /^([A-Z][A-Z0-9_]*): ([\s\S]*)$/
// redis-rs's kinds of the server's error codes.
const GLIDE_KINDS: Readonly<Record<string, string>> = {
  ResponseError: 'ERR',
  NoScriptError: 'NOSCRIPT',
  BusyLoadingError: 'LOADING',
  ReadOnly: 'READONLY',
  PermissionDenied: 'NOPERM',
  MasterDown: 'MASTERDOWN',
  ClusterDown: 'CLUSTERDOWN',
  TryAgain: 'TRYAGAIN',
  ExecAbortError: 'EXECABORT',
  CrossSlot: 'CROSSSLOT',
  Moved: 'MOVED',
  Ask: 'ASK',
  NotBusy: 'NOTBUSY',
}

/**
 * A GLIDE RequestError that carries a server's error reply, as ioredis makes it (`CODE text`); GLIDE's other
 * RequestErrors (a timeout, a lost connection, a closed client: subclasses of their own names) stay as they are.
 */
function glideReply(error: Error): unknown {
  const known = GLIDE_KNOWN.exec(error.message)
  const code = known ? GLIDE_KINDS[known[1] as string] : undefined
  if (known && code !== undefined) return new ReplyError(`${code} ${known[2]}`, { cause: error })
  const other = GLIDE_OTHER.exec(error.message)
  if (other) return new ReplyError(`${other[1]} ${other[2]}`, { cause: error })
  return error
}
