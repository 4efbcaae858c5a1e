import { type RedisServer, startRedisServer } from '@fleetlimit/test-kit/redis-server'

let server: RedisServer | undefined
let url: string | undefined

/** The Redis every integration test uses: REDIS_URL when set, else the server the root hook started. */
export function redisUrl(): string {
  if (url === undefined) throw new Error('the root hook has not started Redis')
  return url
}

export const mochaHooks = {
  async beforeAll(this: Mocha.Context) {
    this.timeout(20_000)
    if (process.env.REDIS_URL) url = process.env.REDIS_URL
    else {
      server = await startRedisServer()
      url = server.url
    }
  },
  async afterAll() {
    await server?.stop()
  },
}
