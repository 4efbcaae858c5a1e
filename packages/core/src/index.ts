export {
  type BreakerState,
  type CircuitBreaker,
  type CircuitBreakerOptions,
  createCircuitBreaker,
} from './circuit-breaker.js'
export type { Decision, DecisionSource } from './decision.js'
export { type Duration, parseDuration } from './duration.js'
export {
  FleetlimitError,
  type FleetlimitErrorCode,
  isFleetlimitError,
  OptionError,
  QueueFullError,
  RateLimitTimeoutError,
  StoreError,
} from './errors.js'
export { type HeaderOptions, type HeaderStandard, rateLimitHeaders } from './headers.js'
export {
  createHttpLimiter,
  type FrameworkInfo,
  type HttpLimiter,
  type HttpOutcome,
  type HttpRateLimitOptions,
  hasLimitSource,
  type RequestInfo,
  UNMATCHED_ROUTE,
  withoutLimitSource,
} from './http-limiter.js'
export { ipTenant } from './ip.js'
export { buildKey, encodeKeyPart, type KeyInput } from './keys.js'
export {
  type AcquireOptions,
  type ConsumeOptions,
  createRateLimiter,
  type LimiterEvents,
  type LimiterStats,
  type Logger,
  type RateLimiter,
  type RateLimiterOptions,
} from './limiter.js'
export type { LocalOptions } from './local-tier.js'
export { type MemoryStore, type MemoryStoreOptions, memoryStore } from './memory-store.js'
export {
  type Algorithm,
  definePolicy,
  type FallbackOptions,
  type Policy,
  type PolicyOptions,
  type PolicyScope,
  type StoreErrorMode,
} from './policy.js'
export { customBody, quotaExceededBody, type ResponseBody, storeUnavailableBody } from './problem.js'
export { type RedisStoreOptions, redisStore } from './redis-store.js'
export { createScriptRunner, type LuaScript, type ScriptClient, type ScriptRunner } from './script-runner.js'
export {
  bucketedWindowScript,
  leaseScript,
  slidingWindowMultiScript,
  slidingWindowScript,
} from './scripts.generated.js'
export { createServerSet, type ServerGuard, type ServerSet, type ServerSetOptions } from './server-set.js'
export {
  isStore,
  type Lease,
  type LeaseRequest,
  type LeaseResult,
  STORE,
  type Store,
  type WindowRequest,
  type WindowResult,
} from './store.js'
