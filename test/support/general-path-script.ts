import type { LuaScript } from '../../packages/core/src/store/script-runner.js'

// The line of lua/sliding-log.lua that sends a call to the general code instead of its fast path.
const FAST_PATH_GATE = "if nk ~= 1 or (op ~= 'c' and op ~= 'p') then\n"

/**
 * lua/sliding-log.lua with its fast path turned off: every call is decided by the general code. A test-only copy
 * (like the test clock's), never shipped: the mirror tests run it beside the script as sent and compare replies and
 * stored bytes, so the fast path and the general code cannot disagree unseen.
 */
export function withoutFastPath(script: LuaScript): LuaScript {
  if (script.lua.split(FAST_PATH_GATE).length !== 2) {
    throw new Error(`${script.name}.lua no longer gates its fast path as this test expects: update the test`)
  }
  return {
    name: `${script.name}-general`,
    lua: script.lua.replace(FAST_PATH_GATE, 'if true then\n'),
    sha1: '0'.repeat(40),
  }
}
