import { createRateLimiter, type RateLimiter, redisStore } from '@fleetlimit/core'
import { expect } from 'chai'
import type { Redis } from 'ioredis'
import sinon from 'sinon'
import { adaptClient } from '../../../packages/core/src/store/clients/adapt-client.js'
import type { ClientAdapter } from '../../../packages/core/src/store/clients/client-adapter.js'
import { createScriptRunner } from '../../../packages/core/src/store/script-runner.js'
import { bucketedScript } from '../../../packages/core/src/store/scripts.generated.js'
import { serverPerTest } from '../../support/faults.js'
import { commandCalls, redisClient, uniquePrefix } from '../../support/redis.js'

const quiet = { warn() {}, info() {} }

// One ioredis connection runs its commands in order: the first call of a script sends its text, the rest its sha1.
describe('createScriptRunner on one ioredis connection', () => {
  const redis = serverPerTest()

  const limiter = () =>
    createRateLimiter({
      store: redisStore(redis.client),
      limit: 1_000_000,
      window: '1m',
      local: false,
      timeoutMs: 10_000,
      logger: quiet,
    })
  /** `count` calls made at once: the ones the store did not decide. */
  const burst = async (tested: RateLimiter, count: number) => {
    const decisions = await Promise.all(Array.from({ length: count }, (_, i) => tested.consume(`t-${i % 50}`)))
    return decisions.filter((d) => d.source !== 'store')
  }
  const calls = async (command: string) => (await commandCalls(redis.client))(command)

  it('a cold burst of 2,000 calls sends the script text once: one EVAL, then EVALSHA', async () => {
    const tested = limiter()
    expect(await burst(tested, 2_000)).to.deep.equal([])
    expect(await calls('eval'), 'EVALs').to.equal(1)
    expect(await calls('evalsha'), 'EVALSHAs').to.be.above(0)
    expect(tested.stats()).to.include({ storeErrors: 0, allowed: 2_000 })
  })

  it('after SCRIPT FLUSH, a burst sends one EVAL more, and no call fails', async () => {
    const tested = limiter()
    expect(await burst(tested, 300)).to.deep.equal([])
    await redis.client.script('FLUSH')
    expect(await burst(tested, 300)).to.deep.equal([])
    expect(await calls('eval')).to.equal(2)
    expect(tested.stats()).to.include({ storeErrors: 0, allowed: 600 })
  })
})

describe('createScriptRunner: NOSCRIPT behind an EVAL that got no answer', () => {
  let client: Redis
  before(() => {
    client = redisClient()
  })
  after(() => client.quit())
  afterEach(() => sinon.restore())

  it('an EVAL lost with its connection is no refusal: the EVALSHA sent behind it sends EVAL and is answered', async () => {
    const lost = new Error('Connection is closed.')
    const noScript = Object.assign(new Error('NOSCRIPT No matching script. Please use EVAL.'), { name: 'ReplyError' })
    const stub = sinon.stub(client, 'call')
    stub.onFirstCall().rejects(lost)
    stub.onSecondCall().rejects(noScript)
    stub.callThrough()
    const runner = createScriptRunner(client)
    const keys = [`${uniquePrefix()}:b`]
    const args = [10, 10_000, 10, 1, 'consume', 0, 0]
    const [first, second] = await Promise.allSettled([
      runner.run(bucketedScript, keys, args),
      runner.run(bucketedScript, keys, args),
    ])
    expect(first).to.deep.equal({ status: 'rejected', reason: lost })
    expect(second.status).to.equal('fulfilled')
    expect((second as PromiseFulfilledResult<number[]>).value.slice(0, 2)).to.deep.equal([1, 9])
    expect(stub.getCalls().map((c) => c.args[0])).to.deep.equal(['EVAL', 'EVALSHA', 'EVAL'])
  })

  it('takes the server its caller names, and looks one up only when none is named', async () => {
    const serverOf = sinon.spy(adaptClient(client) as ClientAdapter, 'serverOf')
    const runner = createScriptRunner(client)
    const keys = [`${uniquePrefix()}:b`]
    const args = [10, 10_000, 10, 1, 'consume', 0, 0]
    const named = (await runner.run(bucketedScript, keys, args, '')) as number[]
    const found = (await runner.run(bucketedScript, keys, args)) as number[]
    expect([named.slice(0, 2), found.slice(0, 2), serverOf.args]).to.deep.equal([[1, 9], [1, 8], [keys]])
  })
})
