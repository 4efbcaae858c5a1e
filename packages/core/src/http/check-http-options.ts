// The first check of an adapter's options: their names, and which policy options may be functions of the request.
import { OptionError } from '../common/errors.js'
import { checkOptionNames, optionNames } from '../common/validate.js'
import { POLICY_ACCEPTS, POLICY_OPTION_NAMES, POLICY_OPTIONS } from '../limiter/policy.js'
import type { HttpRateLimitOptions } from './http-options.js'

const ADAPTER_OPTION_NAMES = optionNames<HttpRateLimitOptions<unknown>>({
  ...POLICY_OPTIONS,
  store: true,
  limiter: true,
  policy: true,
  policies: true,
  tenant: true,
  route: true,
  skip: true,
  headers: true,
  legacyHeaders: true,
  onLimited: true,
  skipFailedRequests: true,
  skipSuccessfulRequests: true,
  requestWasSuccessful: true,
  statusCode: true,
  concurrencyStatusCode: true,
  message: true,
  ipv6Subnet: true,
  logger: true,
  local: true,
  onError: true,
})

/** Policy options an adapter takes as a function of the request; any other one given as a function is an error. */
export const REQUEST_FUNCTIONS = new Set<string>(['limit', 'cost', 'concurrency'])

/**
 * Checks the option names (a peer's familiar name gets ours) and that no policy option but `limit`, `cost` and
 * `concurrency` is a function: what `createHttpLimiter` checks first, for an adapter that builds its limiters
 * later (Fastify's per-route policies).
 */
export function checkHttpOptions<Req, Res>(options: HttpRateLimitOptions<Req, Res>): void {
  checkOptionNames(options, 'rateLimit', ADAPTER_OPTION_NAMES)
  for (const name of POLICY_OPTION_NAMES) {
    const value = options[name]
    if (typeof value !== 'function' || REQUEST_FUNCTIONS.has(name)) continue
    throw new OptionError(
      name,
      value,
      `${POLICY_ACCEPTS[name as keyof typeof POLICY_ACCEPTS]}: of the policy options, only \`limit\`, \`cost\` and \`concurrency\` may be functions of the request`,
    )
  }
}
