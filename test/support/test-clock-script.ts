import type { LuaScript } from '../../packages/core/src/store/script-runner.js'

const TIME_CALL = "local time = redis.call('TIME')"
// A run's calls are in its ARGV (one call or several to an argument): under the test clock, all but the last two.
const CALL_COUNT = 'local args = #ARGV\n'
const EXPIRE_CALL = /redis\.call\('PEXPIRE', [\w.]+, format\('%d', ttl\)\)/g
// A new log, and a hold on a key with no entry, are written with an expiry (SET … PX): under the test clock, without.
const SET_EXPIRY = ", 'PX', format('%d', ttl))"

/**
 * The script with the server's clock replaced by the test's (the two last arguments: seconds and microseconds), a
 * test-only copy made here and never shipped. Its expiries (every PEXPIRE, and every SET … PX) are left out: a key must not expire on the real clock
 * while the test's clock stands still (expiry has its own tests).
 */
export function withTestClock(script: LuaScript): LuaScript {
  const expires = script.lua.match(EXPIRE_CALL)?.length ?? 0
  if (
    !script.lua.includes(TIME_CALL) ||
    !script.lua.includes(CALL_COUNT) ||
    !script.lua.includes(SET_EXPIRY) ||
    expires === 0 ||
    expires !== script.lua.split("'PEXPIRE'").length - 1
  ) {
    throw new Error(`${script.name}.lua no longer reads the clock as this test expects: update the test`)
  }
  const lua = script.lua
    .replace(TIME_CALL, 'local time = { ARGV[#ARGV - 1], ARGV[#ARGV] }')
    .replace(CALL_COUNT, 'local args = #ARGV - 2\n')
    .replaceAll(EXPIRE_CALL, '-- PEXPIRE left out under the test clock')
    .replaceAll(SET_EXPIRY, ')')
  return { name: `${script.name}-test-clock`, lua, sha1: '0'.repeat(40) }
}
