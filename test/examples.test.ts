import { memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'
import request from 'supertest'
import { httpBurst } from '../examples/demo/http-burst.js'
import { createApp as expressApp } from '../examples/express-basic/app.js'
import { createApp as fastifyApp } from '../examples/fastify-plugin/app.js'
import { createApp as koaApp } from '../examples/koa-router/app.js'

describe('the examples', () => {
  it('the demo’s HTTP part: five searches admitted, then 429s, with headers', async () => {
    const exchanges = await httpBurst(7)
    expect(exchanges.map((e) => e.status)).to.deep.equal([200, 200, 200, 200, 200, 429, 429])
    expect(exchanges[5]?.headers['retry-after']).to.equal('10')
    expect(exchanges[0]?.headers['ratelimit-policy']).to.equal('"global";q=100;w=60, "search";q=5;w=10')
  })

  it('all three answer the sixth search with the same 429, and keep the global quota for /users', async () => {
    const express = expressApp(memoryStore())
    const koa = koaApp(memoryStore()).callback()
    const fastify = await fastifyApp(memoryStore())
    await fastify.ready()
    const denials: unknown[] = []
    for (const server of [express, koa, fastify.server]) {
      for (let i = 0; i < 5; i++) expect((await request(server).get('/search')).status).to.equal(200)
      const denied = await request(server).get('/search')
      expect(denied.status).to.equal(429)
      denials.push([denied.headers.ratelimit, denied.headers['retry-after'], denied.text])
      const user = await request(server).get('/users/7')
      expect(user.status).to.equal(200)
      expect(user.headers.ratelimit, 'the denied search was not counted globally').to.equal('"global";r=94;t=60')
    }
    expect(denials[1]).to.deep.equal(denials[0])
    expect(denials[2]).to.deep.equal(denials[0])
    await fastify.close()
  })
})
