// Type-level tests, checked by `pnpm lint` (tsc) rather than run: each adapter's augmentation types the decision
// on the framework's request exactly (not `any`: Koa's DefaultState extends any, so only an exact comparison
// tells), Fastify's `hook` option accepts the three hooks only, and `onError` may log and return nothing.
import type { Decision } from '@fleetlimit/core'
import type { RequestErrorAction } from '@fleetlimit/core/http'
import type { ExpressRateLimitOptions } from '@fleetlimit/express'
import type { FastifyRateLimitOptions, RateLimitHook } from '@fleetlimit/fastify'
import type { KoaRateLimitOptions, KoaRateLimitState } from '@fleetlimit/koa'
import type { Request } from 'express'
import type { FastifyRequest } from 'fastify'
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
