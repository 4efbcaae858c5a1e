// The options every adapter's `rateLimit` takes, as types.
import type { Logger } from '../common/logger.js'
import type { Decision } from '../limiter/decision.js'
import type { CallLimit, RateLimiter } from '../limiter/limiter-types.js'
import type { LocalOptions } from '../limiter/local-tier.js'
import type { Policy, PolicyOptions } from '../limiter/policy.js'
import type { Store } from '../store/store.js'
import type { HeaderStandard } from './headers.js'

type MaybePromise<T> = T | Promise<T>

/**
 * What a request the limiter could not decide on gets (see `onError`): `'respond'`, a 500 problem+json;
 * `'allow'`, through, uncounted; `'throw'`, the error handed to the framework's error handling.
 */
export type RequestErrorAction = 'respond' | 'allow' | 'throw'

/**
 * The options every adapter's `rateLimit` takes; `Req` is the framework's request (or context), `Res` its
 * response (Koa's is the context again).
 */
export interface HttpRateLimitOptions<Req, Res = unknown>
  extends Partial<Omit<PolicyOptions, 'cost' | 'limit' | 'concurrency'>> {
  /**
   * The most units admitted in any window: a number, or a function of the request for per-tenant plans (its
   * result is this request's limit, validated per request: a number, or with several policies a map from
   * policy name to limit). With a function and inline options, the policy's name defaults to
   * `plan-per-<window ms>ms`.
   */
  limit?: number | ((req: Req) => MaybePromise<CallLimit>)
  /**
   * At most this many requests in flight per key (tenant and route), fleet-wide: a whole number, or a function of
   * the request for per-tenant limits (its result is this request's, validated per request). It adds an in-flight
   * policy to the request's policies, decided in the same store call: alone (`rateLimit({ concurrency: 3 })`),
   * beside inline policy options, `policy` or `policies`, not `limiter` (give its limiter an in-flight policy,
   * `definePolicy({ concurrency })`, which is honoured the same way). Its name is `<n>-in-flight` (`in-flight`
   * for a function; an in-flight limit alone takes the inline `name`); it fails open, counts per tenant, or only
   * measures when every other policy does, and its deadline is theirs. An admitted request's slot is released
   * once, when its response finishes, or its client goes away first (a handler that throws ends in the
   * framework's error response); a slot never released (a process that died) comes back after `slotTtlMs`
   * (default 1 minute: set it above your longest request, or keep a long one's slot with
   * `req.rateLimit.extend()`). A full route answers `concurrencyStatusCode`, with a Retry-After of 1 s (a slot may
   * come back at any moment), or a rate policy's longer wait when it denies too.
   */
  concurrency?: number | ((req: Req) => MaybePromise<number>)
  /**
   * Status of a denial by in-flight policies alone (`concurrency`, or in-flight policies in `policies`): 503 to
   * say the server is busy rather than that the client sent too much. A denial by a rate policy answers
   * `statusCode`. Default: `statusCode` (429).
   */
  concurrencyStatusCode?: number
  /** Where the windows live (default: a memory store). Not with `limiter`. */
  store?: Store
  /**
   * A limiter built with createRateLimiter, used as it is. Every middleware built on one limiter counts a request
   * once: the first to see it decides (its route, cost and headers), the others let it through. Middlewares on one
   * store count a request once per store key: a later one whose keys were all counted takes that decision.
   */
  limiter?: RateLimiter
  /** A policy object (definePolicy), instead of inline policy options. */
  policy?: Policy | PolicyOptions
  /** Several policies decided together: admitted only if all admit, counted in all only then. */
  policies?: readonly (Policy | PolicyOptions)[]
  /** Who is limited. Default: the client IP as the framework reports it (its trust-proxy setting applies). */
  tenant?: (req: Req) => MaybePromise<string>
  /** Which route a request counts against. Default: the matched route pattern (`GET /users/:id`). */
  route?: (req: Req) => string | undefined
  /** Units a request costs: a number, or a function of the request. Default 1. */
  cost?: number | ((req: Req) => MaybePromise<number>)
  /** Requests to let through uncounted. */
  skip?: (req: Req) => MaybePromise<boolean>
  /** RateLimit header fields to send. Default 'draft-8'. */
  headers?: HeaderStandard | false
  /** Also send X-RateLimit-* headers. Default false. */
  legacyHeaders?: boolean
  /**
   * Called on every denial, before the response is sent; and on every request a shadow policy would have
   * denied (`decision.shadowDenied`: let through), before it continues.
   */
  onLimited?: (req: Req, decision: Decision) => MaybePromise<void>
  /**
   * Give back the units of a request that failed: its status was 400 or more (or `requestWasSuccessful` said
   * false), or the client closed the connection before the response finished. The refund is made after the
   * response, off its path. Default false.
   */
  skipFailedRequests?: boolean
  /** Give back the units of a request that succeeded: its status was below 400 (or `requestWasSuccessful` said true). Default false. */
  skipSuccessfulRequests?: boolean
  /**
   * Whether a finished request succeeded, for `skipFailedRequests` and `skipSuccessfulRequests`, instead of
   * `status < 400`; called once the response has finished (not for a closed connection: that one failed). Its
   * arguments are Express's `(req, res)`, Fastify's `(request, reply)`, and Koa's `(ctx, ctx)`. A function that
   * throws or returns no boolean leaves the request counted, and is logged once.
   */
  requestWasSuccessful?: (req: Req, res: Res) => MaybePromise<boolean>
  /** Status of a denial (one by in-flight policies alone: `concurrencyStatusCode`). Default 429. */
  statusCode?: number
  /**
   * Body of a denial: text, a JSON value, or a function of the request and decision (its wait as Retry-After
   * tells it: see `concurrency`). Default: problem+json.
   */
  message?: string | object | ((req: Req, decision: Decision) => MaybePromise<string | object>)
  /** Prefix length that groups IPv6 clients into one tenant. Default 56. */
  ipv6Subnet?: number
  /** Where one-time configuration warnings go. Default: console. */
  logger?: Logger
  /** The local tier (deny cache, leases) of the limiter built from these options. */
  local?: LocalOptions | false
  /**
   * Decides what a request gets when it cannot be decided on: a fleetlimit error (a `tenant(req)` that returned
   * no string, a `cost(req)` above the limit, a bad `limit(req)`), or an error your own function threw (tenant,
   * cost, limit, skip, route, onLimited, message). Return `'respond'` (a 500 problem+json), `'allow'` (through,
   * uncounted) or `'throw'` (the framework's error handling: Express `next(error)`, Koa's thrown error, Fastify's
   * error handler); nothing for the default: `'respond'` for fleetlimit's errors (logged once per kind), `'throw'`
   * for your own (so an error with a status, such as Koa's `ctx.throw(401)`, answers with it). Its own error is
   * thrown to the framework.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: an onError that only logs returns nothing, sync or async
  onError?: (error: unknown, req: Req) => MaybePromise<RequestErrorAction | undefined | void>
}
