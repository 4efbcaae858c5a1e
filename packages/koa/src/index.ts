export { type KoaRateLimitOptions, rateLimit } from './rate-limit.js'
