// The contract between core and an adapter: what the adapter reads off its framework's request (RequestInfo), what
// it says of its framework (FrameworkInfo), and the outcome it applies to the response (HttpOutcome).
import type { Decision } from '../limiter/decision.js'

/** What an adapter reads off its framework's request. */
export interface RequestInfo {
  /** The client address as the framework reports it, with its trust-proxy setting applied. */
  readonly ip: string | undefined
  readonly method: string
  /** The matched route pattern, such as `/users/:id`, or undefined when none matched (yet). */
  readonly routePattern: string | undefined
  /**
   * The matched route was declared for several methods (Express `app.all`, @koa/router `router.all`, a Fastify
   * method list; see `manyMethods`): its key is `* <pattern>`, one window for the route whatever the method.
   * Left out or false: the request's method joins the key (`GET /users/:id`).
   */
  readonly manyMethods?: boolean
  /** The request carries an X-Forwarded-For header. */
  readonly forwardedFor: boolean
  /**
   * Whom the framework lets set the client address through X-Forwarded-For: `'none'` (the address is the
   * peer's), `'some'` (listed proxies: addresses, hop counts, a function) or `'all'` (any peer, so every
   * client can write its own address).
   */
  readonly trustProxy: 'none' | 'some' | 'all'
  /** The address of the connection's other end: the proxy's, behind one. */
  readonly peerAddress: string | undefined
}

/**
 * The framework's name and its trust-proxy setting, for the X-Forwarded-For warnings. Leave out both hints when
 * the framework has no such setting (plain `node:http`): the warnings then say to pass `tenant(req)`.
 */
export interface FrameworkInfo {
  readonly name: string
  /** How to make the framework trust a proxy: "Set app.set('trust proxy', …) to your proxy hops or addresses". */
  readonly trustProxyHint?: string
  /** What to set instead of trusting every proxy. */
  readonly trustAllHint?: string
}

/**
 * What the adapter does: continue with these headers set, or answer with this response. `decision` is the
 * limiter's, for the handler (`req.rateLimit`): undefined when none was made (a skipped request, one counted
 * already, a store that failed closed).
 */
export type HttpOutcome =
  | {
      readonly action: 'next'
      readonly headers: Readonly<Record<string, string>>
      readonly decision: Decision | undefined
    }
  | {
      readonly action: 'respond'
      readonly status: number
      readonly headers: Readonly<Record<string, string>>
      readonly body: string
      readonly decision: Decision | undefined
    }
