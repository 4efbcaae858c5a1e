import { expect } from 'chai'
import { asIoredisError } from '../../../../packages/core/src/store/clients/reply-errors.js'
import { isServerFailure, replyCode } from '../../../../packages/core/src/store/server-failure.js'

/** An error as GLIDE makes one: its class's name is its name. */
function glideError(kind: 'RequestError' | 'TimeoutError' | 'ConnectionError' | 'ClosingError', message: string) {
  const error = new Error(message)
  Object.defineProperty(error, 'name', { value: kind })
  return error
}

describe('error replies are classified by their code, whatever the client or the server wrote after it', () => {
  it('GLIDE’s rewritten replies get their code back: known kinds and other codes alike', () => {
    const cases: [string, string, boolean][] = [
      ['An error was signalled by the server: - NoScriptError: No matching script.', 'NOSCRIPT', false],
      [
        'An error was signalled by the server: - NoScriptError: No matching script. Please use EVAL.',
        'NOSCRIPT',
        false,
      ],
      ['An error was signalled by the server: - BusyLoadingError: Redis is loading', 'LOADING', true],
      ['An error was signalled by the server: - ResponseError: user_script:1: boom', 'ERR', false],
      ['An error was signalled by the server: - PermissionDenied: no permissions', 'NOPERM', false],
      [
        'An error was signalled by the server: - ReadOnly: You can’t write against a read only replica.',
        'READONLY',
        false,
      ],
      ['An error was signalled by the server: - ClusterDown: the cluster is down', 'CLUSTERDOWN', true],
      ['An error was signalled by the server: - TryAgain: multiple keys', 'TRYAGAIN', true],
      ['An error was signalled by the server: - MasterDown: link down', 'MASTERDOWN', true],
      ['WRONGTYPE: Operation against a key holding the wrong kind of value', 'WRONGTYPE', false],
      ['BUSY: Redis is busy running a script', 'BUSY', true],
      ['OOM: command not allowed when used memory > maxmemory', 'OOM', false],
      ['WRONGPASS: invalid username-password pair', 'WRONGPASS', true],
    ]
    for (const [message, code, serverFailure] of cases) {
      const error = asIoredisError(glideError('RequestError', message))
      expect(replyCode(error), message).to.equal(code)
      expect(isServerFailure(error), message).to.equal(serverFailure)
    }
  })

  it('the text after the code changes nothing (Valkey 9.1 rewrote its Lua errors’ texts)', () => {
    for (const message of [
      'ERR user_script:1: Script attempted to access nonexistent global variable',
      'ERR Error running script (call to f_0a1b): @user_script:1: some new wording',
      'NOSCRIPT No matching script. Please use EVAL.',
      'NOSCRIPT No matching script.',
    ]) {
      const [code] = message.split(' ')
      const nodeRedis = new Error(message)
      Object.defineProperty(nodeRedis, 'name', { value: 'SimpleError' })
      expect(replyCode(asIoredisError(nodeRedis)), message).to.equal(code)
    }
  })

  it('GLIDE’s timeouts, lost connections and closed clients are no replies: server failures', () => {
    for (const kind of ['TimeoutError', 'ConnectionError', 'ClosingError'] as const) {
      const error = asIoredisError(glideError(kind, 'timed out'))
      expect(replyCode(error), kind).to.equal(undefined)
      expect(isServerFailure(error), kind).to.equal(true)
    }
    // A RequestError that carries no server reply (GLIDE's own words) stays a failure too.
    expect(replyCode(asIoredisError(glideError('RequestError', 'Connection in recovery')))).to.equal(undefined)
  })
})
