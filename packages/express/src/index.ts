export { type ExpressRateLimitOptions, rateLimit } from './rate-limit.js'
