// Type-level tests, checked by `pnpm lint` (tsc) rather than run: each adapter's augmentation types the decision
// on the framework's request exactly (not `any`: Koa's DefaultState extends any, so only an exact comparison
// tells), Fastify's `hook` option accepts the three hooks only, a Fastify route's `config.rateLimit` is checked,
// and `onError` may log and return nothing.
import { type Decision, definePolicy } from '@fleetlimit/core'
import type { RequestErrorAction } from '@fleetlimit/core/http'
import type { ExpressRateLimitOptions } from '@fleetlimit/express'
import type { FastifyRateLimitOptions, RateLimitHook } from '@fleetlimit/fastify'
import type { KoaRateLimitOptions, KoaRateLimitState } from '@fleetlimit/koa'
import type { Request } from 'express'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Context } from 'koa'

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false
type Expect<T extends true> = T

export type DecisionOnRequest = [
  Expect<Equal<Request['rateLimit'], Decision | undefined>>,
  // The adapter's own request type is the augmented one: skip(req), tenant(req), … can read it too.
  Expect<Equal<Parameters<NonNullable<ExpressRateLimitOptions['skip']>>[0]['rateLimit'], Decision | undefined>>,
  Expect<Equal<Context['state']['rateLimit'], Decision | undefined>>,
  Expect<Equal<KoaRateLimitState['rateLimit'], Decision | undefined>>,
  Expect<Equal<FastifyRequest['rateLimit'], Decision | undefined>>,
]

export type FastifyHook = [
  Expect<Equal<RateLimitHook, 'onRequest' | 'preValidation' | 'preHandler'>>,
  Expect<Equal<FastifyRateLimitOptions['hook'], RateLimitHook | undefined>>,
]

export const onErrors: readonly ExpressRateLimitOptions['onError'][] = [
  (error) => {
    console.error(error)
  },
  async (error) => {
    console.error(error)
  },
  (_error, req) => (req.headers['x-api-key'] ? 'respond' : 'allow'),
  async () => 'throw',
]
// biome-ignore lint/suspicious/noConfusingVoidType: the option's own result type, compared exactly
type OnErrorReturn = RequestErrorAction | undefined | void
export type OnErrorResult = Expect<
  Equal<Awaited<ReturnType<NonNullable<KoaRateLimitOptions['onError']>>>, OnErrorReturn>
>

/** `concurrency` takes a number, or a function of each framework's own request, sync or async. */
export const concurrencies: readonly [
  ExpressRateLimitOptions['concurrency'],
  KoaRateLimitOptions['concurrency'],
  FastifyRateLimitOptions['concurrency'],
  ExpressRateLimitOptions['concurrency'],
] = [
  (req) => (req.get('x-plan') === 'pro' ? 10 : 2),
  async (ctx) => (ctx.state.rateLimit ? 1 : 2),
  (request) => (request.headers['x-plan'] === 'pro' ? 10 : 2),
  4,
]

/**
 * A route's `config.rateLimit` fails to compile when it is no policy: Fastify infers the route's config type from
 * the literal itself, so only a policy's required options (a rate's limit and window, or concurrency) can tell a
 * misspelled one; definePolicy checks every name.
 */
export function routeConfigs(app: FastifyInstance): void {
  const ok = async () => 'ok'
  // @ts-expect-error: `limt` is not `limit`
  app.get('/typo', { config: { rateLimit: { limt: 5, window: '1m' } } }, ok)
  // @ts-expect-error: a string is no policy
  app.get('/nonsense', { config: { rateLimit: 'nonsense' } }, ok)
  // @ts-expect-error: true is not how a route keeps the plugin's policy (it leaves config.rateLimit out)
  app.get('/true', { config: { rateLimit: true } }, ok)
  // @ts-expect-error: a rate needs its window
  app.get('/no-window', { config: { rateLimit: { limit: 5 } } }, ok)
  const listTypo = {
    config: {
      rateLimit: [
        { limit: 5, window: '1m' },
        { limt: 5, window: '1s' },
      ],
    },
  }
  // @ts-expect-error: in a list too
  app.get('/list-typo', listTypo, ok)
  // @ts-expect-error: the full route form
  app.route({ method: 'GET', url: '/route', config: { rateLimit: { limt: 5, window: '1m' } }, handler: ok })
  // @ts-expect-error: definePolicy checks every option name
  definePolicy({ limit: 5, window: '1m', nmae: 'search' })

  const search = definePolicy({ name: 'search', limit: 10, window: '10s' })
  app.get('/inline', { config: { rateLimit: { limit: 5, window: '1m', name: 'inline', scope: 'tenant' } } }, ok)
  app.get('/policy', { config: { rateLimit: search } }, ok)
  app.get('/off', { config: { rateLimit: false } }, ok)
  app.get('/in-flight', { config: { rateLimit: { concurrency: 2, slotTtlMs: '30s' } } }, ok)
  app.get('/list', { config: { rateLimit: [search, { name: 'burst', limit: 5, window: '1s' }] } }, ok)
  app.get('/other-config', { config: { rateLimit: search, owner: 'team-a' } }, ok)
  app.route({ method: 'GET', url: '/route-ok', config: { rateLimit: search }, handler: ok })
}
