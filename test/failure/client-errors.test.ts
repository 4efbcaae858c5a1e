import { once } from 'node:events'
import { redisStore } from '@fleetlimit/core'
import { type RedisServer, startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { expect } from 'chai'
import { Redis } from 'ioredis'
import { createClient } from 'redis'
import sinon from 'sinon'

/** A client with no 'error' listener of its own, as a user who relies on fleetlimit's makes it. */
interface BareClient {
  readonly library: string
  readonly client: Parameters<typeof redisStore>[0]
  on(event: 'reconnecting' | 'ready', listener: () => void): unknown
  close(): void
}

const bareClients: readonly { name: string; connect(url: string): Promise<BareClient> }[] = [
  {
    name: 'ioredis',
    async connect(url) {
      const client = new Redis(url, { retryStrategy: () => 20 })
      if (client.status !== 'ready') await once(client, 'ready')
      return { library: 'ioredis', client, on: (e, l) => client.on(e, l), close: () => client.disconnect() }
    },
  },
  {
    name: 'node-redis',
    async connect(url) {
      const client = createClient({ url, socket: { reconnectStrategy: () => 20 } })
      await client.connect()
      return { library: 'node-redis', client, on: (e, l) => client.on(e, l), close: () => client.destroy() }
    },
  },
]

/** Resolves once the emitter has said `event` `times` times. */
const times = (client: BareClient, event: 'reconnecting', count: number) =>
  new Promise<void>((resolve) => {
    let seen = 0
    client.on(event, () => {
      if (++seen === count) resolve()
    })
  })

for (const kind of bareClients) {
  describe(`a ${kind.name} client with no error listener of its own, through an outage`, function () {
    this.timeout(30_000)
    let server: RedisServer
    let client: BareClient
    let printed: sinon.SinonStub
    beforeEach(async () => {
      server = await startRedisServer()
      client = await kind.connect(server.url)
      printed = sinon.stub(console, 'error')
    })
    afterEach(async () => {
      printed.restore()
      client.close()
      await server.stop()
    })

    it('prints one [fleetlimit] line when the outage starts and one when the client is ready again', async () => {
      redisStore(client.client)
      const reconnects = times(client, 'reconnecting', 4)
      const { port } = server
      await server.stop()
      await reconnects
      const lines = () => printed.getCalls().map((call) => call.args.map(String).join(' '))
      expect(lines()).to.have.length(1)
      expect(lines()[0]).to.match(new RegExp(`^\\[fleetlimit\\] ${client.library} client error: \\S`))
      expect(lines()[0]).not.to.include('\n')
      const ready = new Promise<void>((resolve) => client.on('ready', resolve))
      server = await startRedisServer([], { port })
      await ready
      expect(lines()).to.have.length(2)
      expect(lines()[1]).to.match(
        new RegExp(`^\\[fleetlimit\\] ${client.library} client ready again, after \\d+ errors$`),
      )
    })
  })
}
