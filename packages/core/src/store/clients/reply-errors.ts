import { ReplyError } from '../server-failure.js'

// A Redis error reply starts with its code in capitals (ERR, WRONGTYPE, NOSCRIPT, LOADING, …); no error node-redis
// or Node makes for a connection does. The message says it even when a bundler renamed node-redis's classes.
const REPLY_CODE = /^[A-Z][A-Z0-9_]+ /
// The server closes the connection after this reply: a lost connection, not an answer about the call. node-redis
// meets it when it sends a queued command behind a refused AUTH (ioredis waits for 'ready').
const PROTOCOL_ERROR = /^ERR Protocol error/

/**
 * node-redis's error replies (ErrorReply and its SimpleError, BlobError) renamed as ioredis names them; anything
 * else (a closed socket, a closed client) stays as it is.
 */
export function asIoredisError(error: unknown): unknown {
  if (!(error instanceof Error) || error.name === 'ReplyError' || PROTOCOL_ERROR.test(error.message)) return error
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
