import type { RequestInfo } from './adapter-contract.js'

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

/** Route names a limiter keeps: patterns are the app's own, so an app has far fewer. */
const MAX_ROUTE_NAMES = 4_096

/** defaultRoute with its names kept by pattern and method, so that a request of a route seen before builds none. */
export function createRouteNames(): { of(info: RequestInfo): string } {
  const names = new Map<string, Map<string, string>>()
  let size = 0
  return {
    of(info) {
      const pattern = info.routePattern
      if (pattern === undefined) return UNMATCHED_ROUTE
      const method = info.manyMethods ? '*' : info.method
      let byMethod = names.get(pattern)
      let name = byMethod?.get(method)
      if (name !== undefined) return name
      name = defaultRoute(info)
      if (size < MAX_ROUTE_NAMES) {
        if (byMethod === undefined) {
          byMethod = new Map()
          names.set(pattern, byMethod)
        }
        byMethod.set(method, name)
        size++
      }
      return name
    },
  }
}
