export {
  type FastifyRateLimitOptions,
  type RateLimitHook,
  type RoutePolicyOptions,
  type RouteRateLimit,
  rateLimit,
} from './rate-limit.js'
