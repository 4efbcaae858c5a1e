import { StoreError } from '../common/errors.js'
import type { ClientAdapter } from './clients/client-adapter.js'
import { replyCode } from './server-failure.js'

// A script's error reply that says a command was refused inside it: an ACL user's ("The user executing the script
// can't run this command", NOPERM), or a server's own rule ("not allowed", "unknown command", "disabled").
const REFUSED = /can't run this command|no permissions|not allowed|unknown command|disabled|denied/i
// The probe: TIME alone, in a script with no key.
const TIME_PROBE = "return redis.call('TIME')"

/**
 * Says what a refused command was when it is TIME, which every decision reads (the server's clock): a server that
 * refuses it inside scripts can decide nothing, and the first call says so (a StoreError, so a server failure: the
 * breaker stops asking). A refusal's text seldom names the command, so the first refusal runs a probe (TIME alone,
 * in a script) and its verdict is kept. Any other error is returned as it is.
 */
export function createRefusalExplainer(adapter: ClientAdapter): (error: unknown) => Promise<unknown> {
  let timeRefused: Promise<boolean> | undefined
  return async (error) => {
    // Only a refusal inside the script (ERR, NOPERM): a refused login (WRONGPASS, NOAUTH) or a full server (OOM)
    // is not about TIME, and a probe would wait on that connection or grow the full server's script cache.
    const code = replyCode(error)
    if ((code !== 'ERR' && code !== 'NOPERM') || !REFUSED.test((error as Error).message)) return error
    timeRefused ??= adapter.evaluate('EVAL', TIME_PROBE, [], [], false).then(
      () => false,
      (probe: unknown) => replyCode(probe) !== undefined,
    )
    if (!(await timeRefused)) return error
    return new StoreError(
      `the server refuses TIME inside a Lua script (${(error as Error).message}); fleetlimit takes every decision's time from the server's clock, so this server can decide none: allow TIME in scripts (an ACL user with +time) or use a server that does`,
      { cause: error },
    )
  }
}
