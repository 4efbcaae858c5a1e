export { type KoaRateLimitOptions, type KoaRateLimitState, rateLimit } from './rate-limit.js'
