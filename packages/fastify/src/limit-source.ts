import { type HttpRateLimitOptions, inlinePolicy } from '@fleetlimit/core/http'

/** Whether the options name a limit at all (the plugin may be registered for per-route policies only). */
export function hasLimitSource<Req, Res>(options: HttpRateLimitOptions<Req, Res>): boolean {
  const { limiter, policy, policies, concurrency } = options
  return (
    limiter !== undefined ||
    policy !== undefined ||
    policies !== undefined ||
    concurrency !== undefined ||
    Object.keys(inlinePolicy(options)).length > 0
  )
}

/** The options without what sets the limit: what a route's own policy shares with the plugin's options. */
export function withoutLimitSource<Req, Res>(options: HttpRateLimitOptions<Req, Res>): HttpRateLimitOptions<Req, Res> {
  // A function-valued `limit` (per-tenant plans) is the plugin policy's: a route's own policy keeps its limit. So
  // is `concurrency` with its `slotTtlMs`: a route that wants one lists an in-flight policy of its own.
  const limitNames = new Set<string>([
    'limiter',
    'policy',
    'policies',
    'limit',
    'concurrency',
    'slotTtlMs',
    ...Object.keys(inlinePolicy(options)),
  ])
  return Object.fromEntries(Object.entries(options).filter(([name]) => !limitNames.has(name)))
}
