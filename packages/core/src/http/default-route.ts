import type { RequestInfo } from './http-options.js'

/** Requests whose route matched no pattern share one bucket, so raw paths never become keys. */
export const UNMATCHED_ROUTE = '*'

/** HEAD counts as the GET it is served by. */
const servedAs = (method: string) => {
  const upper = method.toUpperCase()
  return upper === 'HEAD' ? 'GET' : upper
}

/**
 * Whether a route declared for these methods (any letter case) takes more than one, HEAD counting as GET: what
 * an adapter reports as `RequestInfo.manyMethods`.
 */
export function manyMethods(methods: Iterable<string>): boolean {
  let first: string | undefined
  for (const method of methods) {
    const served = servedAs(method)
    if (first === undefined) first = served
    else if (served !== first) return true
  }
  return false
}

/**
 * `GET /users/:id` for a matched pattern, `* /api/op` for a route of several methods (one key per route
 * definition), else the shared bucket.
 */
export function defaultRoute(info: RequestInfo): string {
  if (info.routePattern === undefined) return UNMATCHED_ROUTE
  return `${info.manyMethods ? '*' : servedAs(info.method)} ${info.routePattern}`
}
