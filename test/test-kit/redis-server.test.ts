import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { expect } from 'chai'

describe('test-kit: a redis-server the tests start', () => {
  it('removes its directory when it stops, and when something else kills it', async () => {
    const stopped = await startRedisServer()
    expect(existsSync(stopped.dir)).to.equal(true)
    await stopped.stop()
    expect(existsSync(stopped.dir)).to.equal(false)

    const killed = await startRedisServer()
    const exit = once(killed.process, 'exit')
    process.kill(killed.process.pid as number, 'SIGKILL')
    await exit
    expect(existsSync(killed.dir)).to.equal(false)
  })
})
