export { type FastifyRateLimitOptions, type RateLimitHook, type RouteRateLimit, rateLimit } from './rate-limit.js'
