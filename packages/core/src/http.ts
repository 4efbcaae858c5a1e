// @fleetlimit/core/http: the contract for adapter authors (Express, Koa and Fastify use it; so would a Hono or
// NestJS adapter). An adapter reads a RequestInfo off its framework's request, calls `handle`, then copies the
// outcome's headers onto the response (through `stackHeaders`, for a response that another limiter already
// set headers on) and either continues or answers with the outcome's status and body. When `settles`, it hands an
// admitted request's decision to `settle` once the response ends (`onResponseEnd`).
export { type HeaderOptions, type HeaderStandard, rateLimitHeaders, stackHeaders } from './http/headers.js'
export {
  checkHttpOptions,
  createHttpLimiter,
  type FrameworkInfo,
  factoryMisuse,
  type HttpLimiter,
  type HttpLimiterStats,
  type HttpOutcome,
  type HttpRateLimitOptions,
  hasLimitSource,
  manyMethods,
  type NodeResponse,
  onResponseEnd,
  type RequestErrorAction,
  type RequestInfo,
  UNMATCHED_ROUTE,
  withoutLimitSource,
} from './http/http-limiter.js'
export { ipTenant } from './http/ip.js'
export {
  customBody,
  quotaExceededBody,
  type ResponseBody,
  requestErrorBody,
  storeUnavailableBody,
} from './http/problem.js'
