import { expect } from 'chai'
import { isServerFailure } from '../../../packages/core/src/store/server-failure.js'

/** An error as ioredis makes one for an error reply. */
function replyError(message: string): Error {
  const error = new Error(message)
  error.name = 'ReplyError'
  return error
}

describe('which store errors count against the server (the breaker)', () => {
  it('a lost connection, a missed deadline and a server-state reply do; a reply about a key or a script does not', () => {
    for (const error of [
      new Error('Connection is closed.'),
      new Error('no answer within timeoutMs (100 ms)'),
      replyError('LOADING Redis is loading the dataset in memory'),
      replyError('MASTERDOWN Link with MASTER is down'),
      replyError('CLUSTERDOWN The cluster is down'),
      replyError('TRYAGAIN Multiple keys request during rehashing of slot'),
      replyError('BUSY Redis is busy running a script'),
      replyError('NOAUTH Authentication required.'),
      replyError('WRONGPASS invalid username-password pair or user is disabled.'),
    ]) {
      expect(isServerFailure(error), error.message).to.equal(true)
    }
    for (const error of [
      replyError('WRONGTYPE Operation against a key holding the wrong kind of value'),
      replyError('NOPERM this user has no permissions to access one of the keys used as arguments'),
      replyError("OOM command not allowed when used memory > 'maxmemory'."),
      replyError("READONLY You can't write against a read only replica."),
      replyError('ERR user_script:1: Script attempted to access nonexistent global variable'),
    ]) {
      expect(isServerFailure(error), error.message).to.equal(false)
    }
  })
})
