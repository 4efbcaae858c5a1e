import { definePolicy, memoryStore } from '@fleetlimit/core'
import { rateLimit } from '@fleetlimit/fastify'
import { expect } from 'chai'
import Fastify, { type FastifyInstance } from 'fastify'

const policy = definePolicy({ name: 'route', limit: 1, window: '1m' })
const config = { config: { rateLimit: policy } }

/** Three requests to GET /x: each status, with `+h` when RateLimit headers came with it. */
async function threeRequests(app: FastifyInstance): Promise<string[]> {
  await app.ready()
  const seen: string[] = []
  for (let i = 0; i < 3; i++) {
    const res = await app.inject({ url: '/x' })
    seen.push(`${res.statusCode}${res.headers.ratelimit === undefined ? '' : '+h'}`)
  }
  await app.close()
  return seen
}

const LIMITED = ['200+h', '429+h', '429+h']

describe('fastify 5: routes declared before the plugin has loaded are limited too', () => {
  it('a route with its own config.rateLimit after register() without await (CommonJS style)', async () => {
    const app = Fastify()
    void app.register(rateLimit, { store: memoryStore() })
    app.get('/x', config, async () => 'ok')
    expect(await threeRequests(app)).to.deep.equal(LIMITED)
  })

  it('a route with its own config.rateLimit declared before await register()', async () => {
    const app = Fastify()
    app.get('/x', config, async () => 'ok')
    await app.register(rateLimit, { store: memoryStore() })
    expect(await threeRequests(app)).to.deep.equal(LIMITED)
  })

  it('a route in a child context registered before the plugin', async () => {
    const app = Fastify()
    void app.register(async (child) => {
      child.get('/x', config, async () => 'ok')
    })
    void app.register(rateLimit, { store: memoryStore() })
    expect(await threeRequests(app)).to.deep.equal(LIMITED)
  })

  it('a route without a config of its own, declared before the plugin with a policy', async () => {
    const app = Fastify()
    app.get('/x', async () => 'ok')
    await app.register(rateLimit, { store: memoryStore(), policy })
    expect(await threeRequests(app)).to.deep.equal(LIMITED)
  })

  it('routes declared before and after share one limiter per policy object, keyed by route', async () => {
    const store = memoryStore()
    const app = Fastify()
    app.get('/x', config, async () => 'ok')
    await app.register(rateLimit, { store })
    app.get('/y', config, async () => 'ok')
    await app.ready()
    const statuses = []
    for (const url of ['/x', '/y', '/x', '/y']) statuses.push((await app.inject({ url })).statusCode)
    expect(statuses).to.deep.equal([200, 200, 429, 429])
    expect(store.size, 'one window per route').to.equal(2)
    await app.close()
  })

  it('a bad config.rateLimit on a route declared before the plugin fails its requests with the coded error', async () => {
    const app = Fastify({ logger: false })
    app.get('/x', { config: { rateLimit: { limit: -1, window: '1m' } } }, async () => 'ok')
    await app.register(rateLimit, { store: memoryStore() })
    await app.ready()
    const res = await app.inject({ url: '/x' })
    expect(res.statusCode).to.equal(500)
    expect(res.json()).to.include({ code: 'ERR_FLEETLIMIT_OPTION' })
    await app.close()
  })

  it('a bad config.rateLimit on a route declared after the plugin fails at declaration', async () => {
    const app = Fastify()
    await app.register(rateLimit, { store: memoryStore() })
    expect(() => app.get('/x', { config: { rateLimit: { limit: -1, window: '1m' } } }, async () => 'ok'))
      .to.throw()
      .with.property('code', 'ERR_FLEETLIMIT_OPTION')
    await app.close()
  })
})
