// `pnpm test:redis`: the store, limiter and adapter tests, on the one redis-server the root hook starts (a few
// start a server of their own to stop or fill). Cluster, Sentinel, faults, fleets, packaging, docs, examples and
// bench smoke tests run in `pnpm test` only.
const all = require('../.mocharc.cjs')

module.exports = {
  ...all,
  // One process, on the one server (pnpm test runs files in parallel workers, a server each).
  parallel: false,
  spec: ['test/core/**/*.test.ts', 'test/adapters/**/*.test.ts'],
  ignore: ['test/core/fleet.test.ts', 'test/core/demo-scenario.test.ts'],
}
