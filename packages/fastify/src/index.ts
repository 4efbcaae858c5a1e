export { type FastifyRateLimitOptions, type RouteRateLimit, rateLimit } from './rate-limit.js'
