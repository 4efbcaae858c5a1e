// `pnpm test:unit`: the tests that need no Redis, in seconds. Without the root hook no server is started, and a
// test that asks for one fails (redisUrl throws): such a test belongs in redis.mocharc.cjs or only in `pnpm test`.
const { require: rootHook, ...all } = require('../.mocharc.cjs')

module.exports = {
  ...all,
  spec: [
    'test/core/cli/args.test.ts',
    'test/core/common/*.test.ts',
    'test/core/http/*.test.ts',
    'test/core/outbound/*.test.ts',
    'test/core/options.test.ts',
    'test/core/options-mistakes.test.ts',
    'test/core/limiter/acquire-queue.test.ts',
    'test/core/limiter/keys.test.ts',
    'test/core/limiter/limiter.test.ts',
    'test/core/limiter/policy.test.ts',
    'test/core/lua/lean-lua.test.ts',
    'test/core/lua/lua-constants.test.ts',
    'test/core/store/call-batcher.test.ts',
    'test/core/store/call-gate.test.ts',
    'test/core/store/memory-store.test.ts',
    'test/core/store/memory-store-bounds.test.ts',
    'test/core/store/server-clock.test.ts',
    'test/core/store/server-failure.test.ts',
    'test/core/store/sliding-log.test.ts',
    'test/core/store/sliding-log-model.test.ts',
    'test/adapters/express-route-pattern.test.ts',
    'test/adapters/fastify-route-order.test.ts',
    'test/adapters/fastify-limit-source.test.ts',
    'test/adapters/http-settle.test.ts',
    'test/adapters/key-shape.test.ts',
    'test/adapters/option-mistakes.test.ts',
    'test/adapters/sent-response.test.ts',
    'test/adapters/shared-limiter.test.ts',
    'test/failure/circuit-breaker.test.ts',
    'test/docs/links.test.ts',
  ],
}
