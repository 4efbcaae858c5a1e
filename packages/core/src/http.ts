// @fleetlimit/core/http: the contract for adapter authors (Express, Koa and Fastify use it; so would a Hono or
// NestJS adapter). An adapter reads a RequestInfo off its framework's request, calls `handle`, then copies the
// outcome's headers onto the response (through `stackHeaders`, for a response that another limiter already
// set headers on) and either continues or answers with the outcome's status and body. When `settles`, it hands an
// admitted request's decision to `settle` once the response ends (`onResponseEnd`).
export type { FrameworkInfo, HttpOutcome, RequestInfo } from './http/adapter-contract.js'
export {
  customBody,
  factoryMisuse,
  quotaExceededBody,
  type ResponseBody,
  requestErrorBody,
  storeUnavailableBody,
} from './http/answers.js'
export { checkHttpOptions } from './http/check-http-options.js'
export { manyMethods, UNMATCHED_ROUTE } from './http/default-route.js'
export { type HeaderOptions, type HeaderStandard, rateLimitHeaders, stackHeaders } from './http/headers.js'
export { createHttpLimiter, type HttpLimiter } from './http/http-limiter.js'
export type { HttpRateLimitOptions, RequestErrorAction } from './http/http-options.js'
export { ipTenant } from './http/ip.js'
export { inlinePolicy } from './http/limiter-setup.js'
export { type HttpLimiterStats, type NodeResponse, onResponseEnd } from './http/settle.js'
