// @fleetlimit/core: the API for users. Adapter authors use '@fleetlimit/core/http'; everything else in src/ is
// internal (tests import it by path).
export type { Duration } from './common/duration.js'
export {
  FleetlimitError,
  type FleetlimitErrorCode,
  isFleetlimitError,
  OptionError,
  QueueFullError,
  RateLimitTimeoutError,
  StoreError,
} from './common/errors.js'
export type { Logger } from './common/logger.js'
export type { EstimateOptions } from './limiter/cost-estimates.js'
export type { Decision, DecisionSource } from './limiter/decision.js'
export type { KeyInput } from './limiter/keys.js'
export type { LearnedLimit, Lesson } from './limiter/learned-limits.js'
export { createRateLimiter } from './limiter/limiter.js'
export type {
  AcquireOptions,
  CallLimit,
  ConsumeOptions,
  LimiterEvents,
  LimiterStats,
  PeekOptions,
  RateLimiter,
  RateLimiterOptions,
  RefundResult,
} from './limiter/limiter-types.js'
export type { LocalOptions } from './limiter/local-tier.js'
export {
  type Algorithm,
  definePolicy,
  type FallbackOptions,
  type Policy,
  type PolicyOptions,
  type PolicyScope,
  type StoreErrorMode,
} from './limiter/policy.js'
export type { AdaptMode } from './outbound/adapt.js'
export {
  type FetchFunction,
  type LimitedFetchOptions,
  limitedFetch,
  type OutboundLimiter,
} from './outbound/limited-fetch.js'
export type { QuotaMap } from './outbound/quota-map.js'
export type { BreakerState, CircuitBreakerOptions } from './store/circuit-breaker.js'
export type {
  IoredisClient,
  NodeRedisClient,
  NodeRedisCluster,
  RedisStoreClient,
  ValkeyGlideClient,
} from './store/clients/adapt-client.js'
export { type MemoryStore, type MemoryStoreOptions, memoryStore } from './store/memory-store.js'
export { type RedisStoreOptions, redisStore } from './store/redis-store.js'
export type { Store } from './store/store.js'
