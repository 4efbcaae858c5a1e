// The bench's peers as every part uses them: each one's store call and its middleware deny over the limit, and a
// store error (the client's connection closed) rejects the call and reaches the framework's error handler.
import { once } from 'node:events'
import { expect } from 'chai'
import { Redis } from 'ioredis'
import sinon from 'sinon'
import { PEERS } from '../../bench/peers.js'
import { startServer } from '../../bench/servers.js'
import { uniquePrefix } from '../support/redis.js'
import { redisUrl } from '../support/root-hooks.js'

/** Connected, and failing each command at once once disconnected: a store error without a wait. */
async function failFastClient(): Promise<Redis> {
  const client = new Redis(redisUrl(), { enableOfflineQueue: false })
  await once(client, 'ready')
  return client
}

describe('bench peers', () => {
  it('the registry holds the four peers, each on its framework', () => {
    expect(PEERS.map((peer) => [peer.id, peer.framework])).to.deep.equal([
      ['express-rate-limit', 'Express'],
      ['rate-limiter-flexible', 'Express'],
      ['@fastify/rate-limit', 'Fastify'],
      ['koa-ratelimit', 'Koa'],
    ])
  })

  for (const peer of PEERS) {
    it(`${peer.id}: its store call admits up to the limit, then denies, and rejects a store error`, async () => {
      const client = await failFastClient()
      try {
        const decide = await peer.createDecide(client, { limit: 2, windowMs: 60_000, prefix: `${uniquePrefix()}:` })
        expect([await decide('k'), await decide('k'), await decide('k')]).to.deep.equal([true, true, false])
        client.disconnect()
        let error: unknown
        await decide('k').catch((e: unknown) => {
          error = e
        })
        expect(error).to.be.instanceOf(Error)
      } finally {
        client.disconnect()
      }
    })

    it(`${peer.id}: its middleware answers 200, then 429, then 500 on a store error`, async () => {
      const client = await failFastClient()
      const guard = await peer.createGuard(client, { limit: 1, windowMs: 60_000, prefix: `${uniquePrefix()}:` })
      const server = await startServer(peer.framework, { guard })
      // Express and Koa log the errors their default handlers answer.
      const quiet = sinon.stub(console, 'error')
      try {
        const statuses = [(await fetch(server.url)).status, (await fetch(server.url)).status]
        client.disconnect()
        statuses.push((await fetch(server.url)).status)
        expect(statuses).to.deep.equal([200, 429, 500])
      } finally {
        await server.close()
        client.disconnect()
        // Express logs after answering (in a setImmediate), so the stub stays until then.
        await new Promise((resolve) => setImmediate(resolve))
        quiet.restore()
      }
    })
  }
})
