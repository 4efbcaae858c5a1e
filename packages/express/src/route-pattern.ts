import type { Application, Request } from 'express'

/**
 * The part of a key that stands for mount paths whose pattern cannot be read (a router called from a function
 * of one's own, an app mounted with router.use): bounded, so shared by all such mounts.
 */
export const UNKNOWN_MOUNT = '*'

/** What is read off a layer of Express 4's router or of `router` 2.x (Express 5); anything may be missing. */
interface Layer {
  readonly route?: unknown
  readonly handle?: unknown
  /** Express 4: the compiled path, and its parameters in group order. */
  readonly regexp?: unknown
  readonly keys?: unknown
  /** router 2.x: one match function per path, and (2.3 and later) the paths as written. */
  readonly matchers?: unknown
  readonly rawPath?: unknown
  readonly slash?: unknown
}

interface Mount {
  readonly pattern: string
  readonly consumed: number
}

type Chain = readonly Layer[]

/** Routers nested deeper, or more layers, than any real app has are not searched (a cost bound). */
const MAX_LAYERS = 10_000

/**
 * The matched route pattern of an Express request, with the patterns of the routers it is mounted under:
 * `/users/:uid/posts` for a route `/posts` in a router mounted at `/users/:uid`, whatever `:uid` and the
 * letter case of the request were. Express only keeps the matched text (`req.baseUrl`), so the route's
 * position in the app's router tree is found once (by identity of `req.route`) and its mount layers read
 * the text back into their patterns. One instance per middleware: it caches the positions of the routes it sees.
 */
export function createRoutePatterns(): (req: Request) => string | undefined {
  const positions = new WeakMap<object, WeakMap<object, readonly Chain[]>>()

  function chainsTo(app: object, route: object): readonly Chain[] {
    let byRoute = positions.get(app)
    if (!byRoute) {
      byRoute = new WeakMap()
      positions.set(app, byRoute)
    }
    let chains = byRoute.get(route)
    if (!chains) {
      chains = findChains(rootStack(app), route)
      byRoute.set(route, chains)
    }
    return chains
  }

  return (req) => {
    // req.route is set once a route matched: in per-route middleware, not in app.use() before routing.
    const route = req.route as { path?: unknown } | undefined
    if (route?.path === undefined) return undefined
    const path = String(route.path)
    const base = req.baseUrl
    if (!base) return path
    const app = req.app
    const chains = chainsTo(app, route)
    // In an app mounted in another, baseUrl starts with the outer mounts: the app's own mountpath stands for them.
    const outer = appPrefix(app)
    const starts = outer === undefined ? [0] : slashes(base)
    for (const chain of chains) {
      for (const start of starts) {
        const inner = readMounts(chain, base.slice(start))
        if (inner !== undefined) return `${outer ?? ''}${inner}${path}`
      }
    }
    return `${UNKNOWN_MOUNT}${path}`
  }
}

/** The app's own router stack: `app._router` on Express 4, `app.router` on Express 5. */
function rootStack(app: object): unknown {
  const express4 = (app as { _router?: { stack?: unknown } })._router
  if (express4) return express4.stack
  try {
    return (app as { router?: { stack?: unknown } }).router?.stack
  } catch {
    // Express 4 throws on app.router (removed in 4.0): no router yet.
    return undefined
  }
}

/** Every path of mount layers from the stack to the route's layer (a router may be mounted twice). */
function findChains(stack: unknown, route: object): readonly Chain[] {
  const chains: Chain[] = []
  let budget = MAX_LAYERS
  const open = new Set<unknown>()
  const walk = (layers: unknown, chain: Chain): void => {
    if (!Array.isArray(layers) || open.has(layers)) return
    open.add(layers)
    for (const layer of layers as readonly (Layer | null | undefined)[]) {
      if (--budget < 0) break
      if (!layer) continue
      if (layer.route === route) chains.push(chain)
      else if (layer.route === undefined && typeof layer.handle === 'function') {
        walk((layer.handle as { stack?: unknown }).stack, [...chain, layer])
      }
    }
    open.delete(layers)
  }
  walk(stack, [])
  return chains
}

/** The patterns the layers were mounted at, read from the text they consumed; undefined unless they consume it all. */
function readMounts(chain: Chain, text: string): string | undefined {
  let rest = text
  let pattern = ''
  for (const layer of chain) {
    const mount = readMount(layer, rest)
    if (!mount) return undefined
    pattern += mount.pattern
    rest = rest.slice(mount.consumed)
    // A mount path ending in '/' took the separator: Express puts one back for the next layer.
    if (rest !== '' && !rest.startsWith('/')) rest = `/${rest}`
  }
  return rest === '' ? pattern : undefined
}

function readMount(layer: Layer, text: string): Mount | undefined {
  const regexp = layer.regexp
  if (layer.slash === true || (regexp as { fast_slash?: unknown } | undefined)?.fast_slash === true) {
    return { pattern: '', consumed: 0 }
  }
  if (Array.isArray(layer.matchers)) return routerMount(layer, layer.matchers, text)
  if (regexp instanceof RegExp) return express4Mount(layer, regexp, text)
  return undefined
}

/** router 2.x: the path as written when it is kept (2.3+), else rebuilt from what the match function returns. */
function routerMount(layer: Layer, matchers: readonly unknown[], text: string): Mount | undefined {
  for (const [i, matcher] of matchers.entries()) {
    if (typeof matcher !== 'function') continue
    let match: unknown
    try {
      match = matcher(text)
    } catch {
      continue // a malformed %-escape: the router would not have mounted here
    }
    const { path, params } = (match || {}) as { path?: unknown; params?: unknown }
    if (typeof path !== 'string') continue
    const raw = Array.isArray(layer.rawPath) ? (layer.rawPath[i] as unknown) : layer.rawPath
    const pattern =
      typeof raw === 'string'
        ? trimSlash(raw)
        : raw instanceof RegExp
          ? String(raw)
          : patternFromParams(path, typeof params === 'object' && params !== null ? params : {})
    return { pattern, consumed: path.length }
  }
  return undefined
}

/**
 * A bounded, case-folded form of matched text when the pattern is not kept (router before 2.3): each segment
 * that holds a parameter's value becomes `:name`, or `*name` for a wildcard's segments (one for a run of them),
 * or `*` when it mixes text and values; the others can only be the pattern's own text, lower-cased as
 * case-insensitive routing matched it.
 */
function patternFromParams(path: string, params: object): string {
  const entries = Object.entries(params)
  // Wildcards first: their segments, however many, then all read as the one `*name`.
  const values = [
    ...entries.flatMap(([name, value]) =>
      Array.isArray(value) ? value.filter(nonEmpty).map((v) => ({ name: `*${name}`, value: v })) : [],
    ),
    ...entries.flatMap(([name, value]) => (nonEmpty(value) ? [{ name: `:${name}`, value }] : [])),
  ]
  const segments: string[] = []
  for (const segment of path.split('/')) {
    const text = decodeSegment(segment)
    const exact = values.find((v) => v.value === text)?.name
    const part = exact ?? (values.some((v) => text.includes(v.value)) ? '*' : segment.toLowerCase())
    if (!(part.startsWith('*') && part.length > 1 && segments.at(-1) === part)) segments.push(part)
  }
  return trimSlash(segments.join('/'))
}

const nonEmpty = (value: unknown): value is string => typeof value === 'string' && value !== ''

/** Express 4 compiles a string path to `^…\/?(?=\/|$)` (path-to-regexp 0.1); any other regexp is the user's. */
const COMPILED_MOUNT = /^\^.*\(\?=\\\/\|\$\)$/s
const withIndices = new WeakMap<RegExp, RegExp>()

/**
 * Express 4 keeps only the compiled regexp: the matched text with each parameter's span replaced by `:name`
 * (lower-cased where the match ignored case) is the path as written, up to letter case. A regexp mount path
 * is keyed as the regexp itself.
 */
function express4Mount(layer: Layer, regexp: RegExp, text: string): Mount | undefined {
  let indexed = withIndices.get(regexp)
  if (!indexed) {
    indexed = new RegExp(regexp.source, `${regexp.flags.replace(/[gyd]/g, '')}d`)
    withIndices.set(regexp, indexed)
  }
  const match = indexed.exec(text)
  if (match?.index !== 0) return undefined
  const matched = match[0]
  if (!COMPILED_MOUNT.test(regexp.source)) return { pattern: String(regexp), consumed: matched.length }
  const keys = Array.isArray(layer.keys) ? (layer.keys as readonly { name?: unknown }[]) : []
  const literal = (part: string) => (regexp.ignoreCase ? part.toLowerCase() : part)
  let pattern = ''
  let at = 0
  for (let group = 1; group < match.length; group++) {
    const span = match.indices?.[group]
    // An optional group that did not take part, or a group inside one already replaced.
    if (!span || span[0] < at) continue
    pattern += `${literal(matched.slice(at, span[0]))}:${String(keys[group - 1]?.name ?? group - 1)}`
    at = span[1]
  }
  return { pattern: trimSlash(pattern + literal(matched.slice(at))), consumed: matched.length }
}

/** The mount paths of an app mounted in others (`app.use('/v1', subApp)`), outermost first; undefined for the main app. */
function appPrefix(app: Application): string | undefined {
  let prefix: string | undefined
  type Mounted = { readonly parent?: Mounted; readonly mountpath?: unknown }
  // Bounded: an app cannot be its own ancestor, but the walk should not rely on it.
  for (let current = app as Mounted, depth = 0; current.parent && depth < 100; current = current.parent, depth++) {
    const mountpath = current.mountpath
    prefix = `${typeof mountpath === 'string' ? trimSlash(mountpath) : String(mountpath)}${prefix ?? ''}`
  }
  return prefix
}

/** Outer mounts deeper than this are not looked for: a bound on the work a long wildcard match can cause. */
const MAX_OUTER_SEGMENTS = 32

/** Where the app's own mounts may start in baseUrl: at one of its first segment boundaries, or at its end. */
function slashes(base: string): number[] {
  const starts: number[] = []
  for (let i = base.indexOf('/'); i !== -1 && starts.length < MAX_OUTER_SEGMENTS; i = base.indexOf('/', i + 1)) {
    starts.push(i)
  }
  starts.push(base.length)
  return starts
}

const trimSlash = (path: string) => path.replace(/\/+$/, '')

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    return segment
  }
}
