// An adapter's options checked once, each in turn, into the frozen record that createHttpLimiter decides with.
import { OptionError } from '../common/errors.js'
import type { Logger } from '../common/logger.js'
import { checkBoolean, checkInteger, checkOneOf, optionalFunction } from '../common/validate.js'
import type { RateLimiter } from '../limiter/limiter-types.js'
import { MAX_LIMIT, type Policy } from '../limiter/policy.js'
import { checkHttpOptions } from './check-http-options.js'
import type { HeaderOptions, HeaderStandard } from './headers.js'
import type { HttpRateLimitOptions } from './http-options.js'
import { resolveLimiter } from './limiter-setup.js'

const STANDARDS = ['draft-6', 'draft-7', 'draft-8'] as const

type Options<Req, Res> = HttpRateLimitOptions<Req, Res>

/** An adapter's options, checked once: what `createHttpLimiter` decides with. */
export interface ResolvedHttpOptions<Req, Res> {
  readonly limiter: RateLimiter
  readonly tenantOf: Options<Req, Res>['tenant']
  readonly routeOf: Options<Req, Res>['route']
  readonly skip: Options<Req, Res>['skip']
  readonly onLimited: Options<Req, Res>['onLimited']
  readonly onError: Options<Req, Res>['onError']
  readonly skipFailed: boolean
  readonly skipSuccessful: boolean
  readonly wasSuccessful: Options<Req, Res>['requestWasSuccessful']
  readonly costOf: Exclude<Options<Req, Res>['cost'], number>
  readonly limitOf: Exclude<Options<Req, Res>['limit'], number>
  /** The inline policy's name when limit(req) gives it its only limit: a map from limit(req) must name it. */
  readonly unlimited: string | undefined
  readonly concurrencyOf: Exclude<Options<Req, Res>['concurrency'], number>
  /** The name of the in-flight policy the `concurrency` option added, if any. */
  readonly ownInFlight: string | undefined
  /** With `ownInFlight`: the one policy beside it, which a bare number from limit(req) limits. */
  readonly rateName: string | undefined
  /** The limiter's in-flight policies, by name: their admissions hold slots until the response ends. */
  readonly inFlight: ReadonlySet<string>
  readonly statusCode: number
  readonly concurrencyStatusCode: number
  readonly ipv6Subnet: number
  readonly message: Options<Req, Res>['message']
  readonly logger: Logger
  /** The most a request may cost under the policies' own limits. */
  readonly maxCost: number
  readonly headerOptions: HeaderOptions
}

/** Checks an adapter's options once, each in turn (the first bad one is the one named), and builds or takes its limiter. */
export function resolveHttpOptions<Req, Res>(options: Options<Req, Res>): ResolvedHttpOptions<Req, Res> {
  checkHttpOptions(options)
  const { limiter, ownInFlight, rateName, unlimited } = resolveLimiter(options)
  const tenantOf = optionalFunction(options.tenant, 'tenant')
  const routeOf = optionalFunction(options.route, 'route')
  const skip = optionalFunction(options.skip, 'skip')
  const onLimited = optionalFunction(options.onLimited, 'onLimited')
  const onError = optionalFunction(options.onError, 'onError')
  const skipFailed = checkBoolean(options.skipFailedRequests ?? false, 'skipFailedRequests')
  const skipSuccessful = checkBoolean(options.skipSuccessfulRequests ?? false, 'skipSuccessfulRequests')
  const wasSuccessful = options.requestWasSuccessful
  if (wasSuccessful !== undefined && typeof wasSuccessful !== 'function') {
    throw new OptionError(
      'requestWasSuccessful',
      wasSuccessful,
      'a function of (req, res) that returns (or resolves to) true for a successful request',
    )
  }
  const costOf = optionalFunction(typeof options.cost === 'function' ? options.cost : undefined, 'cost')
  const limitOf = optionalFunction(typeof options.limit === 'function' ? options.limit : undefined, 'limit')
  const concurrencyOf = typeof options.concurrency === 'function' ? options.concurrency : undefined
  const standard: HeaderStandard | false =
    options.headers === false ? false : checkOneOf(options.headers ?? 'draft-8', 'headers', STANDARDS)
  const legacy = checkBoolean(options.legacyHeaders ?? false, 'legacyHeaders')
  const statusCode = checkInteger(options.statusCode ?? 429, 'statusCode', 400, 599)
  const concurrencyStatusCode = checkInteger(
    options.concurrencyStatusCode ?? statusCode,
    'concurrencyStatusCode',
    400,
    599,
  )
  const ipv6Subnet = checkInteger(options.ipv6Subnet ?? 56, 'ipv6Subnet', 1, 128)
  const message = options.message
  if (message === null || !['undefined', 'string', 'object', 'function'].includes(typeof message)) {
    throw new OptionError('message', message, 'a string, an object or a function of (req, decision)')
  }
  const logger = options.logger ?? console
  if (typeof logger?.warn !== 'function')
    throw new OptionError('logger', logger, 'an object with a warn(message) method')
  const slotPolicies = limiter.policies.filter((p) => p.concurrency !== undefined)
  const rates = limiter.policies.filter((p) => p.concurrency === undefined)

  return Object.freeze({
    limiter,
    tenantOf,
    routeOf,
    skip,
    onLimited,
    onError,
    skipFailed,
    skipSuccessful,
    wasSuccessful,
    costOf,
    limitOf,
    unlimited,
    concurrencyOf,
    ownInFlight,
    rateName,
    inFlight: new Set(slotPolicies.map((p) => p.name)),
    statusCode,
    concurrencyStatusCode,
    ipv6Subnet,
    message,
    logger,
    // A request takes one slot of an in-flight policy whatever its cost.
    maxCost: rates.length === 0 ? MAX_LIMIT : Math.min(...rates.map((p) => p.limit)),
    headerOptions: { standard, legacy, windows: new Map(limiter.policies.map((p) => [p.name, headerWindow(p)])) },
  })
}

/** A calendar period's nominal length (RateLimit-Policy's `w`): its reset (`t`) says when the current one ends. */
const NOMINAL_PERIOD_MS = { day: 86_400_000, week: 604_800_000, month: 2_592_000_000 } as const

/** The window a policy's RateLimit-Policy field names, in ms. */
const headerWindow = (policy: Policy) => (policy.period ? NOMINAL_PERIOD_MS[policy.period] : policy.window)
