// What differs between Redis-compatible servers (Valkey, Dragonfly, KeyDB, managed services), each point checked
// here on a real redis-server, a server of the test's own (an ACL user, a stub that speaks RESP), or the scripts.
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import { createServer, type Server, type Socket } from 'node:net'
import { createRateLimiter, isFleetlimitError, redisStore, type StoreError } from '@fleetlimit/core'
import { logUnits } from '@fleetlimit/test-kit/log-units'
import { type RedisServer, startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { expect } from 'chai'
import { Redis } from 'ioredis'
import { createClient } from 'redis'
import { createScriptRunner, type LuaScript } from '../../../packages/core/src/store/script-runner.js'
import * as scripts from '../../../packages/core/src/store/scripts.generated.js'
import { describeStoreConformance } from '../../support/conformance.js'
import { describeHoldsAndRefunds } from '../../support/holds.js'
import { describePlans } from '../../support/plans.js'
import { clientKinds, redisClient, type TestClient, uniquePrefix } from '../../support/redis.js'
import { redisUrl } from '../../support/root-hooks.js'

const quiet = { warn() {}, info() {} }
const sha1 = (text: string) => createHash('sha1').update(text).digest('hex')

// Every command lua/*.lua sends with a key, each with its key first; TIME and PUBLISH take none.
const KEYED = ['GET', 'SET', 'SETRANGE', 'GETRANGE', 'EXISTS', 'DEL', 'PEXPIRE', 'PEXPIREAT', 'HGETALL', 'HSET', 'HDEL']
const KEYED_SORTED = [
  'HINCRBY',
  'ZREMRANGEBYSCORE',
  'ZADD',
  'ZREM',
  'ZSCORE',
  'ZCOUNT',
  'ZRANGEBYSCORE',
  'ZREVRANGEBYSCORE',
  'ZREVRANGE',
]
/**
 * A script with redis.call and redis.pcall checked: a command whose key is not one of KEYS (or a command this list
 * does not know) fails the script. A test-only copy, never shipped.
 */
function withDeclaredKeysOnly(script: LuaScript): LuaScript {
  const [first, ...rest] = script.lua.split('\n')
  const check = [
    'local real_redis = redis',
    'local declared = {}',
    'for _, key in ipairs(KEYS) do declared[key] = true end',
    `local keyed = { ${[...KEYED, ...KEYED_SORTED].map((c) => `${c} = true`).join(', ')} }`,
    'local keyless = { TIME = true, PUBLISH = true }',
    'local function checked(call)',
    '  return function(command, ...)',
    '    local key = ...',
    '    local name = string.upper(command)',
    "    if not keyless[name] and not (keyed[name] and declared[key]) then error('UNDECLARED ' .. name .. ' ' .. tostring(key), 0) end",
    '    return call(command, ...)',
    '  end',
    'end',
    'local redis = setmetatable({ call = checked(real_redis.call), pcall = checked(real_redis.pcall) }, { __index = real_redis })',
  ]
  const lua = [first, ...check, ...rest].join('\n')
  return { name: `${script.name}-declared-keys`, lua, sha1: sha1(lua) }
}

describe('Redis-compatible servers: what differs between them', function () {
  this.timeout(60_000)

  describe('every key a script touches is one of its KEYS (servers that lock keys per script, Cluster routing)', () => {
    // The shipped scripts' objects, swapped for checked copies while these suites run (the store reads them per call).
    const swapped = [
      scripts.slidingLogScript,
      scripts.slidingLogReadOnlyScript,
      scripts.bucketedScript,
      scripts.bucketedReadOnlyScript,
    ] as { lua: string; sha1: string }[]
    const saved = swapped.map(({ lua, sha1 }) => ({ lua, sha1 }))
    let redis: Redis
    before(() => {
      for (const script of swapped) {
        const { lua, sha1 } = withDeclaredKeysOnly(script as LuaScript)
        Object.assign(script, { lua, sha1 })
      }
      redis = redisClient()
    })
    after(async () => {
      for (const [i, script] of swapped.entries()) Object.assign(script, saved[i])
      await redis.quit()
    })

    it('the check fails a script that touches a key it did not declare', async () => {
      const probe = withDeclaredKeysOnly({ name: 'probe', sha1: '', lua: "#!lua\nreturn redis.call('GET', 'other')" })
      const error = await redis.eval(probe.lua, 1, 'declared').catch((e: unknown) => e)
      expect(String(error)).to.match(/UNDECLARED GET other/)
      expect(await redis.eval(withDeclaredKeysOnly(probe).lua.replace("'other'", 'KEYS[1]'), 1, 'k')).to.equal(null)
    })

    const make = () => redisStore(redis, { prefix: uniquePrefix() })
    describeStoreConformance('every script call checked for undeclared keys', make)
    describeHoldsAndRefunds('every script call checked for undeclared keys', make)
    describePlans('every script call checked for undeclared keys', make)

    it('in-flight slots, their release and their wake-ups run checked too', async () => {
      const limiter = createRateLimiter({ store: make(), concurrency: 2, logger: quiet })
      const [a, b] = [await limiter.consume('t'), await limiter.consume('t')]
      expect((await limiter.consume('t')).allowed).to.equal(false)
      const waiting = limiter.acquire('t', { maxWaitMs: 5_000 })
      await limiter.release(a)
      expect((await waiting).allowed).to.equal(true)
      await limiter.release(b)
    })
  })

  for (const kind of clientKinds) {
    describe(`SCRIPT FLUSH every 50 ms during 20,000 concurrent decisions (${kind.name})`, () => {
      let server: RedisServer
      let admin: Redis
      let tested: TestClient
      before(async () => {
        server = await startRedisServer()
        admin = new Redis(server.url)
        tested = await kind.connect(server.url)
      })
      after(async () => {
        await tested?.close()
        admin?.disconnect()
        await server?.stop()
      })

      it('0 errors, each NOSCRIPT answered by one resend at most, and the units recorded are the units admitted', async () => {
        const prefix = uniquePrefix()
        const limiter = createRateLimiter({
          store: redisStore(tested.client, { prefix }),
          name: 'api',
          limit: 150,
          window: '1m',
          timeoutMs: '10s',
          local: false,
          logger: quiet,
        })
        await admin.call('CONFIG', 'RESETSTAT')
        const tenants = Array.from({ length: 200 }, (_, i) => `t${i}`)
        let flushes = 0
        const flusher = setInterval(() => {
          flushes++
          admin.script('FLUSH').catch(() => {})
        }, 50)
        let decisions: { tenant: string; allowed: boolean }[]
        try {
          decisions = await Promise.all(
            Array.from({ length: 20_000 }, (_, i) => {
              const tenant = tenants[i % tenants.length] as string
              return limiter.consume(tenant).then((d) => ({ tenant, allowed: d.allowed }))
            }),
          )
        } finally {
          clearInterval(flusher)
        }
        expect(limiter.stats()).to.include({ decisions: 20_000, storeErrors: 0 })
        // 100 decisions a tenant, under a limit of 150: each admitted, and recorded once.
        expect(decisions.filter((d) => d.allowed)).to.have.length(20_000)
        let recorded = 0
        for (const tenant of tenants) recorded += await logUnits(admin, `${prefix}:api~sl3-60000:{${tenant}}`)
        expect(recorded, 'units recorded = units admitted').to.equal(20_000)
        const stats = await admin.info('errorstats')
        const noscript = Number(/errorstat_NOSCRIPT:count=(\d+)/.exec(stats)?.[1] ?? 0)
        const evals = Number(/cmdstat_eval:calls=(\d+)/.exec(await admin.info('commandstats'))?.[1] ?? 0)
        if (flushes > 1) expect(noscript, 'a flush met calls in flight').to.be.greaterThan(0)
        expect(evals, 'one EVAL per NOSCRIPT at most (and the first)').to.be.at.most(noscript + 1)
      })
    })
  }

  describe('a NOSCRIPT reply without Redis’s suffix (Valkey: "NOSCRIPT No matching script.")', () => {
    let stub: Server
    const seen: string[] = []
    before(async () => {
      // A server that answers EVALSHA with Valkey's text, EVAL with 7, and anything else (a client's set-up) OK.
      stub = createServer((socket: Socket) => {
        let buffered = ''
        socket.on('data', (chunk) => {
          buffered += chunk.toString('latin1')
          for (;;) {
            const command = readCommand(buffered)
            if (!command) return
            buffered = buffered.slice(command.length)
            const name = (command.args[0] ?? '').toUpperCase()
            seen.push(name)
            socket.write(
              name === 'EVALSHA' ? '-NOSCRIPT No matching script.\r\n' : name === 'EVAL' ? ':7\r\n' : '+OK\r\n',
            )
          }
        })
      })
      stub.listen(0, '127.0.0.1')
      await once(stub, 'listening')
    })
    after(() => stub.close())
    const port = () => (stub.address() as { port: number }).port
    const script: LuaScript = { name: 'seven', lua: '#!lua\nreturn 7', sha1: sha1('#!lua\nreturn 7') }

    /** Two runs of the script: EVAL, then EVALSHA met by the stub's NOSCRIPT, sent once more as EVAL; both answered. */
    async function expectOneResend(client: Parameters<typeof createScriptRunner>[0]) {
      seen.length = 0
      const runner = createScriptRunner(client)
      expect(await runner.run(script, ['k'], [])).to.equal(7)
      expect(await runner.run(script, ['k'], [])).to.equal(7)
      expect(seen.filter((c) => c.startsWith('EVAL'))).to.deep.equal(['EVAL', 'EVALSHA', 'EVAL'])
    }

    it('ioredis: the EVALSHA met by NOSCRIPT is sent once more as EVAL, and answered', async () => {
      const client = new Redis({ port: port(), enableReadyCheck: false })
      try {
        await expectOneResend(client)
      } finally {
        client.disconnect()
      }
    })

    it('node-redis: the same', async () => {
      const client = createClient({ url: `redis://127.0.0.1:${port()}` })
      client.on('error', () => {})
      await client.connect()
      try {
        await expectOneResend(client)
      } finally {
        client.destroy()
      }
    })
  })

  describe('replies that do not depend on RESP2 or RESP3', () => {
    let client: ReturnType<typeof createClient>
    before(async () => {
      client = createClient({ url: redisUrl(), RESP: 3 })
      await client.connect()
    })
    after(() => client.destroy())
    // GLIDE speaks RESP3 by default: its kind in the store suites runs them on RESP3 too.
    describeStoreConformance('redisStore on a node-redis RESP3 connection', () =>
      redisStore(client, { prefix: uniquePrefix() }),
    )
  })

  describe('a server that refuses TIME inside a script says so at the first call', () => {
    let admin: Redis
    before(async () => {
      admin = redisClient()
      await admin.call('ACL', 'SETUSER', 'notime', 'on', '>pw', '~*', '&*', '+@all', '-time')
    })
    after(async () => {
      await admin.call('ACL', 'DELUSER', 'notime')
      await admin.quit()
    })

    for (const kind of clientKinds) {
      it(`${kind.name}: ERR_FLEETLIMIT_STORE naming TIME at the first call, warned once`, async () => {
        const tested = await kind.connect(redisUrl().replace('redis://', 'redis://notime:pw@'))
        try {
          const warnings: string[] = []
          const limiter = createRateLimiter({
            store: redisStore(tested.client, { prefix: uniquePrefix() }),
            limit: 5,
            window: '1m',
            logger: { warn: (message: string) => warnings.push(message) },
          })
          const error = (await limiter.consume('t').catch((e: unknown) => e)) as StoreError
          expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_STORE')).to.equal(true)
          expect(error.message, error.message).to.include('the server refuses TIME inside a Lua script')
          expect(error.message).to.include('allow TIME in scripts (an ACL user with +time)')
          // Redis's own text names no command: a probe found that TIME is the one refused.
          expect(error.message).to.include("The user executing the script can't run this command")
          expect(warnings, 'said once, at the first call').to.have.length(1)
          expect(warnings[0]).to.include('refuses TIME')
        } finally {
          await tested.close()
        }
      })
    }
  })
})

/** One RESP command (an array of bulk strings) at the start of `text`, with its length; undefined when incomplete. */
function readCommand(text: string): { args: string[]; length: number } | undefined {
  const head = /^\*(\d+)\r\n/.exec(text)
  if (!head) return undefined
  let at = head[0].length
  const args: string[] = []
  for (let i = 0; i < Number(head[1]); i++) {
    const size = /^\$(\d+)\r\n/.exec(text.slice(at))
    if (!size) return undefined
    at += size[0].length
    if (text.length < at + Number(size[1]) + 2) return undefined
    args.push(text.slice(at, at + Number(size[1])))
    at += Number(size[1]) + 2
  }
  return { args, length: at }
}
