import express5 from 'express'
import expressLowest from 'express-lowest'
import express4 from 'express4'
import express4Lowest from 'express4-lowest'
import Fastify from 'fastify'
import FastifyLowest from 'fastify-lowest'
import Koa3 from 'koa'
import KoaLowest from 'koa-lowest'
import Koa2 from 'koa2'
import Koa2Lowest from 'koa2-lowest'

/** How a suite builds its case for each framework, given a version's name and its module. */
export interface FrameworkMakers<F> {
  express(name: string, express: typeof express5): F
  koa(name: string, Koa: typeof Koa3): F
  fastify(name: string, fastify: typeof Fastify): F
}

/**
 * One case per supported framework version, newest and lowest: each older version is typed as the workspace's
 * (the same API).
 */
export function eachVersion<F>(make: FrameworkMakers<F>): F[] {
  return [
    make.express('express 5', express5),
    make.express('express 4', express4 as typeof express5),
    make.koa('koa 3', Koa3),
    make.koa('koa 2', Koa2 as typeof Koa3),
    make.fastify('fastify 5', Fastify),
    make.express('express 5.0.0', expressLowest),
    make.express('express 4.21.0', express4Lowest as typeof express5),
    make.koa('koa 3.0.0', KoaLowest),
    make.koa('koa 2.15.0', Koa2Lowest as typeof Koa3),
    make.fastify('fastify 5.0.0', FastifyLowest as unknown as typeof Fastify),
  ]
}
