// Tests run against the TypeScript sources: the '@fleetlimit/source' export condition points each
// workspace package at src/, and tsx compiles on the fly, so `pnpm test` needs no build first.
// `pnpm test` runs this (everything, as CI does); test/unit.mocharc.cjs and test/redis.mocharc.cjs run parts.
module.exports = {
  'node-option': ['conditions=@fleetlimit/source', 'import=tsx'],
  require: ['test/support/root-hooks.ts'],
  spec: ['test/**/*.test.ts'],
  extension: ['ts'],
  timeout: 30_000,
  reporter: './test/support/reporter.cjs',
  // Two files at a time, each in a worker process with its own redis-server (the root hook runs per file): most
  // files wait on servers, child processes and timers, so two cores finish the suite in about half the time.
  parallel: true,
  jobs: 2,
}
