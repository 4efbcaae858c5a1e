import { fork } from 'node:child_process'
import { once } from 'node:events'
import { createServer as createHttpServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { createRateLimiter, type RateLimiter, redisStore } from '@fleetlimit/core'
import { type RedisServer, startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { expect } from 'chai'
import { Redis } from 'ioredis'
import { USAGE } from '../../../packages/core/src/cli/args.js'
import { adaptClient } from '../../../packages/core/src/store/clients/adapt-client.js'
import { childMessages } from '../../support/child-messages.js'
import { runCli } from '../../support/cli.js'
import { redisClient, uniquePrefix } from '../../support/redis.js'
import { redisUrl } from '../../support/root-hooks.js'

const quiet = { warn() {}, info() {} }

describe('the fleetlimit command line, on a real Redis', function () {
  this.timeout(30_000)
  let client: Redis
  let prefix: string
  let limiter: RateLimiter
  /** The options every command here takes: this test's server and prefix, and the policy below. */
  let target: string[]
  const policy = ['--policy', 'api', '--window', '1m']

  beforeEach(async () => {
    client = redisClient()
    prefix = uniquePrefix()
    target = ['--redis', redisUrl(), '--prefix', prefix]
    limiter = createRateLimiter({
      store: redisStore(client, { prefix }),
      name: 'api',
      limit: 3,
      window: '1m',
      logger: quiet,
    })
    // acme as an app-level middleware counts it (route '*'): 3 admitted, the fourth denied; globex once.
    for (let i = 0; i < 4; i++) await limiter.consume({ tenant: 'acme', route: '*' })
    await limiter.consume('globex')
  })
  afterEach(() => client.disconnect())

  const acme = () => `${prefix}:api~sl3-60000:{acme}:*`

  it('peek shows the key it read and the usage, for a person', async () => {
    const run = await runCli(['peek', 'acme', '--route', '*', ...policy, '--limit', '3', ...target])
    expect(run.stderr).to.equal('')
    expect(run.code).to.equal(0)
    const lines = run.stdout.trimEnd().split('\n')
    expect(lines.slice(0, 3)).to.deep.equal([
      `key        ${acme()}`,
      'policy     api, window 1m, limit 3',
      'used       3 of 3 (0 remaining)',
    ])
    expect(lines[3]).to.match(/^window {5}empties in \d+\.\d s$/)
    expect(lines[4]).to.equal('paused     no')
    expect(lines[5]).to.match(/^next call {2}denied, retry in \d+\.\d s$/)
    expect(lines).to.have.length(6)
  })

  it('peek shows the limit limitedFetch learned of the upstream, and where from', async () => {
    await limiter.learn({ tenant: 'acme', route: '*' }, { source: 'headers', limit: 2 })
    const run = await runCli(['peek', 'acme', '--route', '*', ...policy, '--limit', '3', ...target])
    expect(run.stdout.trimEnd().split('\n').at(-1)).to.equal("learned    limit 2, from the upstream's quota headers")
    const json = await runCli(['peek', 'acme', '--route', '*', ...policy, '--json', ...target])
    expect(JSON.parse(json.stdout)).to.deep.include({ learned: { limit: 2, source: 'headers' } })
  })

  it('peek shows the limit each policy of a limiter learned, under its own --policy', async () => {
    const llm = createRateLimiter({
      store: redisStore(client, { prefix }),
      policies: [
        { name: 'rpm', limit: 60, window: '1m' },
        { name: 'tpm', limit: 100_000, window: '1m' },
      ],
      logger: quiet,
    })
    await llm.consume('openai', { cost: { rpm: 1, tpm: 1_200 } })
    await llm.learn('openai', { source: 'headers', limit: 30, policy: 'rpm' })
    await llm.learn('openai', { source: 'headers', limit: 50_000, policy: 'tpm' })
    for (const [name, limit, learned] of [
      ['rpm', '60', 30],
      ['tpm', '100000', 50_000],
    ] as const) {
      const json = await runCli([
        'peek',
        'openai',
        '--policy',
        name,
        '--window',
        '1m',
        '--limit',
        limit,
        '--json',
        ...target,
      ])
      expect(JSON.parse(json.stdout)).to.deep.include({ learned: { limit: learned, source: 'headers' } })
    }
    const run = await runCli(['peek', 'openai', '--policy', 'tpm', '--window', '1m', '--limit', '100000', ...target])
    expect(run.stdout.trimEnd().split('\n').at(-1)).to.equal(
      "learned    limit 50000, from the upstream's quota headers",
    )
  })

  it('peek of an empty key names the tenant’s live keys of the policy: most often the route was left out', async () => {
    const run = await runCli(['peek', 'acme', ...policy, ...target])
    expect(run.stdout).to.equal(
      [
        `key        ${prefix}:api~sl3-60000:{acme}`,
        'policy     api, window 1m',
        'used       0',
        'window     empty',
        'paused     no',
        "live keys  --route '*'",
        '',
      ].join('\n'),
    )
    const json = await runCli(['peek', 'acme', ...policy, '--json', ...target])
    expect(JSON.parse(json.stdout)).to.deep.include({ used: 0, otherRoutes: ['*'] })
  })

  it('peek --json: one object with the key, the usage and the next call’s answer', async () => {
    const run = await runCli(['peek', 'acme', '--route', '*', ...policy, '--limit', '3', '--json', ...target])
    expect(run.code).to.equal(0)
    const out = JSON.parse(run.stdout) as Record<string, unknown>
    expect(out).to.deep.include({
      command: 'peek',
      key: acme(),
      policy: { name: 'api', windowMs: 60_000, algorithm: 'sliding-log', limit: 3 },
      tenant: 'acme',
      route: '*',
      used: 3,
      pausedMs: 0,
      remaining: 0,
      allowed: false,
    })
    const decision = await limiter.peek({ tenant: 'acme', route: '*' })
    // The same wait the limiter reports, read a moment earlier.
    expect(out.retryAfterMs).to.be.within(decision.retryAfterMs, 60_000)
    expect(out.resetMs).to.be.within(decision.resetMs, 60_000)
  })

  it('keys lists the live keys of the prefix with their usage, by SCAN', async () => {
    const monitor = redisClient()
    await monitor.config('RESETSTAT')
    const run = await runCli(['keys', '--json', ...target])
    expect(run.code).to.equal(0)
    const out = JSON.parse(run.stdout) as { keys: Record<string, unknown>[]; truncated: boolean }
    expect(out.truncated).to.equal(false)
    expect(
      out.keys.map(({ key, tenant, route, used, pausedMs }) => ({ key, tenant, route, used, pausedMs })),
    ).to.deep.equal([
      { key: acme(), tenant: 'acme', route: '*', used: 3, pausedMs: 0 },
      { key: `${prefix}:api~sl3-60000:{globex}`, tenant: 'globex', route: undefined, used: 1, pausedMs: 0 },
    ])
    const stats = await monitor.info('commandstats')
    monitor.disconnect()
    expect(stats).to.not.match(/cmdstat_keys:/)
    expect(stats).to.match(/cmdstat_scan:calls=[1-9]/)

    const human = await runCli(['keys', ...target])
    const lines = human.stdout.trimEnd().split('\n')
    expect(lines[0]).to.equal('USED  EMPTIES IN  PAUSED  KEY')
    expect(lines[1]).to.match(new RegExp(`^3 {5}\\d+\\.\\d s {6}- {7}${literal(acme())}$`))
    expect(lines.at(-1)).to.equal(`2 keys under prefix "${prefix}"`)
  })

  it('keys lists a policy with priority classes by its window, not its classes’ share keys; peek reads the window', async () => {
    const ranked = createRateLimiter({
      store: redisStore(client, { prefix }),
      name: 'ranked',
      limit: 10,
      window: '1m',
      priorities: [
        { name: 'interactive', share: 0.7 },
        { name: 'batch', share: 0.3 },
      ],
      logger: quiet,
    })
    await ranked.consume('initech', { priority: 'interactive', cost: 2 })
    await ranked.consume('initech', { priority: 'batch', cost: 3 })
    // A held share key (a waiter's hold): a header with a hold, beside its entries.
    await redisStore(client, { prefix }).hold([{ key: 'ranked~sl3-60000~p-batch:{initech}', windowMs: 60_000 }], 30_000)
    expect(await client.exists(`${prefix}:ranked~sl3-60000~p-batch:{initech}`)).to.equal(1)
    const run = await runCli(['keys', '--json', '--policy', 'ranked', ...target])
    expect(run.code).to.equal(0)
    const out = JSON.parse(run.stdout) as { keys: Record<string, unknown>[] }
    expect(out.keys.map(({ key, used, pausedMs }) => ({ key, used, pausedMs }))).to.deep.equal([
      { key: `${prefix}:ranked~sl3-60000:{initech}`, used: 5, pausedMs: 0 },
    ])
    const peek = await runCli(['peek', 'initech', '--policy', 'ranked', '--window', '1m', '--limit', '10', ...target])
    expect(peek.code).to.equal(0)
    expect(peek.stdout.split('\n').slice(0, 3)).to.deep.equal([
      `key        ${prefix}:ranked~sl3-60000:{initech}`,
      'policy     ranked, window 1m, limit 10',
      'used       5 of 10 (5 remaining)',
    ])
  })

  it('a bucketed policy: its key names its buckets, and the flags name them too', async () => {
    const bulk = createRateLimiter({
      store: redisStore(client, { prefix }),
      name: 'bulk',
      limit: 50,
      window: '1h',
      algorithm: 'bucketed',
      buckets: 12,
      logger: quiet,
    })
    for (let i = 0; i < 7; i++) await bulk.consume('acme')
    const flags = ['--policy', 'bulk', '--window', '1h', '--algorithm', 'bucketed', '--buckets', '12']
    const run = await runCli(['peek', 'acme', ...flags, '--limit', '50', '--json', ...target])
    expect(JSON.parse(run.stdout)).to.deep.include({
      key: `${prefix}:bulk~bw1-3600000-12:{acme}`,
      policy: { name: 'bulk', windowMs: 3_600_000, algorithm: 'bucketed', buckets: 12, limit: 50 },
      used: 7,
      remaining: 43,
      allowed: true,
    })
    const unnamed = await runCli(['peek', 'acme', '--policy', 'bulk', '--window', '1h', ...target])
    expect(unnamed.code).to.equal(2)
    expect(unnamed.stderr).to.include('--policy bulk --window 1h --algorithm bucketed --buckets 12')
  })

  it('pause denies the key in every process until resume', async () => {
    const paused = await runCli(['pause', 'globex', ...policy, '--for', '10m', ...target])
    expect(paused.code).to.equal(0)
    expect(paused.stdout).to.match(
      new RegExp(
        `^paused ${literal(`${prefix}:api~sl3-60000:{globex}`)}: every call denied for \\d+\\.\\d s, in every process\\n$`,
      ),
    )
    const denied = await limiter.consume('globex')
    expect(denied.allowed).to.equal(false)
    expect(denied.retryAfterMs).to.be.within(590_000, 600_000)

    const listed = JSON.parse((await runCli(['keys', '--json', ...target])).stdout) as { keys: { pausedMs: number }[] }
    expect(listed.keys[1]?.pausedMs).to.be.within(590_000, 600_000)

    const resumed = await runCli(['resume', 'globex', ...policy, '--json', ...target])
    expect(resumed.code).to.equal(0)
    expect(JSON.parse(resumed.stdout)).to.deep.include({ command: 'resume', resumed: true, forgottenUnits: 1 })
    expect(await limiter.consume('globex')).to.include({ allowed: true, source: 'store' })

    const again = await runCli(['resume', 'globex', ...policy, ...target])
    expect(again.stdout).to.equal(`not paused: ${prefix}:api~sl3-60000:{globex} (nothing changed)\n`)
  })

  it('reset admits a client blocked in another process’s local tier again, at once', async () => {
    // The child's limiter: limit 2 a minute, the default name (2-per-60000ms), key 'k'; its deny cache holds k.
    const child = fork(fileURLToPath(new URL('../../support/reset-child.ts', import.meta.url)), {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    try {
      const { next } = childMessages(child)
      const exit = once(child, 'exit')
      // A deadline a busy machine does not miss: the child's decisions must come from Redis.
      child.send({ redisUrl: redisUrl(), prefix, timeoutMs: 5_000 })
      expect(await next()).to.deep.equal({ type: 'denied', sources: ['store', 'store', 'store', 'local'] })
      const run = await runCli(['reset', 'k', '--limit', '2', '--window', '1m', ...target])
      expect(run.stderr).to.equal('')
      expect(run.stdout).to.equal(
        `reset ${prefix}:2-per-60000ms~sl3-60000:{k}: 2 units forgotten; every process asks Redis again\n`,
      )
      expect(await next()).to.deep.equal({ type: 'after', allowed: true, source: 'store' })
      await exit
    } finally {
      child.kill()
    }
  })

  it('reset of an empty key names the tenant’s live keys: the route was most often left out', async () => {
    const run = await runCli(['reset', 'acme', ...policy, ...target])
    expect(run.code).to.equal(0)
    expect(run.stdout).to.equal(
      [
        `reset ${prefix}:api~sl3-60000:{acme}: 0 units forgotten; every process asks Redis again`,
        "the key was empty; the tenant's live keys: --route '*'",
        '',
      ].join('\n'),
    )
    const json = await runCli(['reset', 'acme', ...policy, '--json', ...target])
    expect(JSON.parse(json.stdout)).to.deep.include({ forgottenUnits: 0, otherRoutes: ['*'] })
    // The blocked key was left alone: acme is still denied under route '*'.
    expect((await limiter.peek({ tenant: 'acme', route: '*' })).allowed).to.equal(false)
  })

  describe('an in-flight policy (concurrency: 3), its 3 slots held', () => {
    let slotClient: Redis
    let parallel: RateLimiter
    const inFlight = ['--policy', 'par', '--slot-ttl', '1m']
    const par = () => `${prefix}:par~if1-60000:{acme}`

    beforeEach(async () => {
      slotClient = redisClient()
      parallel = createRateLimiter({
        store: redisStore(slotClient, { prefix }),
        name: 'par',
        concurrency: 3,
        logger: quiet,
      })
      for (let i = 0; i < 3; i++) expect((await parallel.consume('acme')).allowed).to.equal(true)
    })
    afterEach(() => slotClient.disconnect())

    it('keys lists the slot key: the slots held, and when the last ends', async () => {
      const run = await runCli(['keys', '--policy', 'par', '--json', ...target])
      expect(run.stderr).to.equal('')
      const listed = JSON.parse(run.stdout) as { keys: Record<string, unknown>[] }
      const { keys } = listed
      expect(keys).to.have.length(1)
      const [row] = keys as [Record<string, number>]
      expect(row).to.deep.include({
        key: par(),
        policy: { name: 'par', inFlight: true, slotTtlMs: 60_000 },
        tenant: 'acme',
        used: 3,
        pausedMs: 0,
      })
      expect(row.resetMs).to.be.within(1, 60_000)
      expect(row.nextSlotEndMs).to.be.within(1, row.resetMs as number)

      const human = (await runCli(['keys', ...target])).stdout.trimEnd().split('\n')
      expect(human[0]).to.equal('USED     EMPTIES IN  PAUSED  KEY')
      expect(human[3]).to.match(new RegExp(`^3 slots  \\d+\\.\\d s {6}- {7}${literal(par())}$`))
      expect(human.at(-1)).to.equal(`3 keys under prefix "${prefix}"`)
      const named = JSON.parse((await runCli(['keys', ...inFlight, '--json', ...target])).stdout) as typeof listed
      expect(named.keys.map(({ key }) => key)).to.deep.equal([par()])
    })

    it('peek shows the slots held, when the next and the last end, and what the next call gets', async () => {
      const run = await runCli(['peek', 'acme', ...inFlight, '--concurrency', '3', ...target])
      expect(run.stderr).to.equal('')
      const lines = run.stdout.trimEnd().split('\n')
      expect(lines.slice(0, 3)).to.deep.equal([
        `key        ${par()}`,
        'policy     par, in flight, slots live 1m, concurrency 3',
        'held       3 of 3 slots (0 free)',
      ])
      expect(lines[3]).to.match(/^slots {6}the next ends in \d+\.\d s, the last in \d+\.\d s$/)
      expect(lines[4]).to.match(/^next call {2}denied, retry in \d+\.\d s$/)
      expect(lines).to.have.length(5)

      const json = JSON.parse(
        (await runCli(['peek', 'acme', ...inFlight, '--concurrency', '3', '--json', ...target])).stdout,
      )
      expect(json).to.deep.include({
        command: 'peek',
        key: par(),
        policy: { name: 'par', inFlight: true, slotTtlMs: 60_000, concurrency: 3 },
        used: 3,
        pausedMs: 0,
        remaining: 0,
        allowed: false,
      })
      // The next call waits for the soonest slot to end (read a moment after it).
      expect(json.nextSlotEndMs).to.be.within(1, json.resetMs)
      expect(json.retryAfterMs).to.be.within(1, json.nextSlotEndMs)
      // The policy's name alone does not name the key: the live policies say which flags do.
      const unnamed = await runCli(['peek', 'acme', '--policy', 'par', '--window', '1m', ...target])
      expect(unnamed.code).to.equal(2)
      expect(unnamed.stderr).to.include('--policy par --slot-ttl 1m')
      const gone = await runCli(['peek', 'acme', '--policy', 'par', '--slot-ttl', '30s', ...target])
      expect(gone.code).to.equal(2)
      expect(gone.stderr).to.match(/^fleetlimit: unknown in-flight policy "par" with slot life 30s: no live key of it/)
    })

    it('reset frees the slots in Redis, and a waiter in another process takes one at once', async () => {
      const waiterClient = redisClient()
      try {
        const waiterStore = redisStore(waiterClient, { prefix })
        const waiter = createRateLimiter({ store: waiterStore, name: 'par', concurrency: 3, logger: quiet })
        // The waiter hears resets once its subscription is confirmed (the store's one subscriber connection).
        await adaptClient(waiterClient)?.subscribe(`${prefix}:changed`, () => {})
        const waiting = waiter.acquire('acme', { maxWaitMs: 20_000 })
        const run = await runCli(['reset', 'acme', ...inFlight, ...target])
        expect(run.stderr).to.equal('')
        expect(run.stdout).to.equal(`reset ${par()}: 3 slots freed; every process asks Redis again\n`)
        expect(await waiting).to.include({ allowed: true, source: 'store' })
        // The 3 slots are gone: the waiter's is the only one held.
        expect(await client.zcard(par())).to.equal(1)
        const after = JSON.parse((await runCli(['peek', 'acme', ...inFlight, '--json', ...target])).stdout)
        expect(after).to.deep.include({ used: 1 })
      } finally {
        waiterClient.disconnect()
      }
    })

    it('pause is refused: an in-flight policy is limited by its slots, which reset frees', async () => {
      expect(await runCli(['pause', 'acme', ...inFlight, '--for', '1m', ...target])).to.deep.equal({
        code: 2,
        stdout: '',
        stderr:
          'fleetlimit: pause holds a rate policy’s window; an in-flight policy has slots, not a window to hold ' +
          '(reset frees its slots) (fleetlimit --help)\n',
      })
    })
  })

  describe('a calendar policy (3 a day in Pacific/Auckland), 2 used', () => {
    let calendarClient: Redis
    let quota: RateLimiter
    const daily = ['--policy', 'quota', '--period', 'day', '--time-zone', 'Pacific/Auckland']
    const key = () => `${prefix}:quota~pd1-day-Pacific/Auckland:{acme}`

    beforeEach(async () => {
      calendarClient = redisClient()
      quota = createRateLimiter({
        store: redisStore(calendarClient, { prefix }),
        name: 'quota',
        limit: 3,
        period: 'day',
        timeZone: 'Pacific/Auckland',
        logger: quiet,
      })
      for (let i = 0; i < 2; i++) expect((await quota.consume('acme')).allowed).to.equal(true)
    })
    afterEach(() => calendarClient.disconnect())

    it('keys lists its count, its period’s start and its reset in Auckland time, beside the windows', async () => {
      const { start, reset } = localDay('Pacific/Auckland', Date.now())
      const run = await runCli(['keys', '--json', ...target])
      expect(run.stderr).to.equal('')
      const { keys } = JSON.parse(run.stdout) as { keys: Record<string, unknown>[] }
      const row = keys.find((listed) => listed.key === key()) as Record<string, unknown>
      expect(row).to.deep.include({
        policy: { name: 'quota', period: 'day', timeZone: 'Pacific/Auckland' },
        tenant: 'acme',
        used: 2,
        pausedMs: 0,
        periodStart: start,
        resetAt: reset,
      })
      expect(row.resetMs).to.be.within(1, 25 * 3_600_000)

      const human = (await runCli(['keys', ...target])).stdout.trimEnd().split('\n')
      expect(human[0]).to.equal('USED  EMPTIES IN  PAUSED  PERIOD START               RESETS AT                  KEY')
      expect(human[3]).to.match(
        new RegExp(`^2 {5}\\d+\\.\\d s *- {7}${literal(start)}  ${literal(reset)}  ${literal(key())}$`),
      )
      // A window's key has no period: dashes in its columns.
      expect(human[1]).to.match(new RegExp(`^3 {5}\\d+\\.\\d s *- {7}- {26}- {26}${literal(acme())}$`))
      const named = await runCli(['keys', ...daily, '--limit', '3', ...target])
      expect(named.stdout.trimEnd().split('\n')[1]).to.match(
        new RegExp(`^2 of 3  \\d+\\.\\d s *- {7}${literal(start)}  ${literal(reset)}  ${literal(key())}$`),
      )
    })

    it('peek shows the count of the limit, the period’s start and its reset in Auckland time', async () => {
      const { start, reset } = localDay('Pacific/Auckland', Date.now())
      const run = await runCli(['peek', 'acme', ...daily, '--limit', '3', ...target])
      expect(run.stderr).to.equal('')
      const lines = run.stdout.trimEnd().split('\n')
      expect(lines.slice(0, 4)).to.deep.equal([
        `key        ${key()}`,
        'policy     quota, per day in Pacific/Auckland, limit 3',
        'used       2 of 3 (1 remaining)',
        `period     day from ${start}`,
      ])
      expect(lines[4]).to.match(new RegExp(`^resets {5}at ${literal(reset)}, in \\d+\\.\\d s$`))
      expect(lines.slice(5)).to.deep.equal(['paused     no', 'next call  admitted'])

      const json = JSON.parse((await runCli(['peek', 'acme', ...daily, '--limit', '3', '--json', ...target])).stdout)
      expect(json).to.deep.include({
        command: 'peek',
        key: key(),
        policy: { name: 'quota', period: 'day', timeZone: 'Pacific/Auckland', limit: 3 },
        used: 2,
        pausedMs: 0,
        periodStart: start,
        resetAt: reset,
        remaining: 1,
        allowed: true,
        retryAfterMs: 0,
      })
    })

    it('a paused calendar key shows held; resume and reset forget its count', async () => {
      const paused = await runCli(['pause', 'acme', ...daily, '--for', '10m', ...target])
      expect(paused.stdout).to.match(new RegExp(`^paused ${literal(key())}: every call denied for \\d+\\.\\d s`))
      expect((await quota.consume('acme')).allowed).to.equal(false)
      const { keys } = JSON.parse((await runCli(['keys', ...daily, '--json', ...target])).stdout) as {
        keys: { used: number; pausedMs: number }[]
      }
      expect(keys.map(({ used }) => used)).to.deep.equal([2])
      expect(keys[0]?.pausedMs).to.be.within(1, 600_000)
      const peek = (await runCli(['peek', 'acme', ...daily, '--limit', '3', ...target])).stdout.trimEnd().split('\n')
      expect(peek[5]).to.match(/^paused {5}for \d+\.\d s more$/)
      expect(peek[6]).to.match(/^next call {2}denied, retry in \d+\.\d s$/)

      const resumed = await runCli(['resume', 'acme', ...daily, ...target])
      expect(resumed.stdout).to.match(/the pause \(\d+\.\d s left\) ended, and 2 units forgotten\n$/)
      expect((await quota.consume('acme')).allowed).to.equal(true)
      const reset = await runCli(['reset', 'acme', ...daily, ...target])
      expect(reset.stdout).to.equal(`reset ${key()}: 1 unit forgotten; every process asks Redis again\n`)
      for (let i = 0; i < 3; i++) expect((await quota.consume('acme')).allowed).to.equal(true)
    })

    it('peek --anchor of a monthly key: the period by the tenant’s billing day', async () => {
      const plan = createRateLimiter({
        store: redisStore(calendarClient, { prefix }),
        ...{ name: 'plan', limit: 5, period: 'month', timeZone: 'Europe/Berlin' },
        logger: quiet,
      })
      await plan.consume('acme', { anchor: 31 })
      const monthly = ['--policy', 'plan', '--period', 'month', '--time-zone', 'Europe/Berlin', '--limit', '5']
      const json = JSON.parse(
        (await runCli(['peek', 'acme', ...monthly, '--anchor', '31', '--json', ...target])).stdout,
      )
      const { start, reset } = localMonth('Europe/Berlin', Date.now(), 31)
      expect(json).to.deep.include({ used: 1, remaining: 4, periodStart: start, resetAt: reset })
      // An empty key's period is the one --anchor names.
      const empty = await runCli(['peek', 'globex', ...monthly, '--anchor', '31', '--json', ...target])
      expect(JSON.parse(empty.stdout)).to.deep.include({ used: 0, remaining: 5, periodStart: start, resetAt: reset })
    })
  })

  describe('one line on stderr and a non-zero exit for what an operator gets wrong', () => {
    it('no command: the help on stderr and exit 2; --help: the help on stdout and exit 0', async () => {
      expect(await runCli([])).to.deep.equal({ code: 2, stdout: '', stderr: `${USAGE}\n` })
      expect(await runCli(['--redis', redisUrl()])).to.deep.equal({ code: 2, stdout: '', stderr: `${USAGE}\n` })
      expect(await runCli(['--help'])).to.deep.equal({ code: 0, stdout: `${USAGE}\n`, stderr: '' })
    })

    it('a port that is no Redis (an HTTP server): says so, not a protocol error to report', async () => {
      const http = createHttpServer((_, res) => res.end('ok'))
      http.listen(0, '127.0.0.1')
      await once(http, 'listening')
      const { port } = http.address() as AddressInfo
      try {
        expect(await runCli(['keys', '--redis', `redis://127.0.0.1:${port}`])).to.deep.equal({
          code: 1,
          stdout: '',
          stderr:
            `fleetlimit: the server at redis://127.0.0.1:${port} is not a Redis server: its answer starts with "H", ` +
            'as an HTTP server’s does (check the host and port)\n',
        })
      } finally {
        http.close()
      }
    })

    it('an unknown policy (a name or window no live key has), listing the live ones', async () => {
      const run = await runCli(['peek', 'acme', '--policy', 'api', '--window', '1h', ...target])
      expect(run).to.deep.equal({
        code: 2,
        stdout: '',
        stderr:
          `fleetlimit: unknown policy "api" with window 1h: no live key of it under prefix "${prefix}"; ` +
          'live policies: --policy api --window 1m (--force acts anyway)\n',
      })
      const forced = await runCli([
        'pause',
        'acme',
        '--policy',
        'api',
        '--window',
        '1h',
        '--for',
        '1m',
        '--force',
        ...target,
      ])
      expect(forced.code).to.equal(0)
    })

    it('an invalid policy, naming the flag', async () => {
      expect(await runCli(['peek', 'acme', '--policy', 'no good', '--window', '1m', ...target])).to.deep.equal({
        code: 2,
        stdout: '',
        stderr:
          'fleetlimit: invalid --policy: got "no good"; expected 1 to 64 letters, digits, `.`, `_` or `-`, starting ' +
          'with a letter or digit.\n',
      })
      const window = await runCli(['reset', 'acme', '--policy', 'api', '--window', '1x', ...target])
      expect(window.code).to.equal(2)
      expect(window.stderr).to.match(/^fleetlimit: invalid --window: got "1x"; expected [^\n]+\n$/)
    })

    it('a bad URL, and a server that is not there', async () => {
      expect(await runCli(['keys', '--redis', 'http://127.0.0.1:6379'])).to.deep.equal({
        code: 2,
        stdout: '',
        stderr: 'fleetlimit: not a Redis URL: "http://127.0.0.1:6379/" (expected redis:// or rediss://)\n',
      })
      const server = await startRedisServer()
      await server.stop()
      expect(await runCli(['keys', '--redis', server.url])).to.deep.equal({
        code: 1,
        stdout: '',
        stderr: `fleetlimit: cannot connect to Redis at ${server.url}: connection refused\n`,
      })
    })

    it('a server that accepts the connection but answers nothing: one line and exit 1, not a hang', async () => {
      const server = await startRedisServer()
      server.freeze()
      try {
        expect(await runCli(['keys', '--redis', server.url])).to.deep.equal({
          code: 1,
          stdout: '',
          stderr: `fleetlimit: cannot connect to Redis at ${server.url}: no answer within 5 s\n`,
        })
      } finally {
        server.thaw()
        await server.stop()
      }
    })

    it('a wrong password, or none, without showing the password given', async () => {
      const server = await startRedisServer(['--requirepass', 'right'])
      try {
        const url = `redis://:wrong@127.0.0.1:${server.port}`
        expect(await runCli(['keys', '--redis', url])).to.deep.equal({
          code: 1,
          stdout: '',
          stderr:
            `fleetlimit: Redis at redis://:***@127.0.0.1:${server.port} refused the credentials: WRONGPASS invalid ` +
            'username-password pair or user is disabled.\n',
        })
        const none = await runCli(['keys', '--redis', `redis://127.0.0.1:${server.port}`])
        expect(none.code).to.equal(1)
        expect(none.stderr).to.equal(
          `fleetlimit: Redis at redis://127.0.0.1:${server.port} needs a password: give it in the URL, ` +
            'redis://:password@host:port (NOAUTH Authentication required.)\n',
        )
        const right = await runCli(['keys', '--redis', `redis://:right@127.0.0.1:${server.port}`])
        expect(right).to.deep.equal({ code: 0, stdout: '0 keys under prefix "fleetlimit"\n', stderr: '' })
      } finally {
        await server.stop()
      }
    })
  })
})

describe('the fleetlimit command line on a read-only replica', function () {
  this.timeout(60_000)
  let primary: RedisServer
  let replica: RedisServer
  let client: Redis

  before(async () => {
    primary = await startRedisServer(['--repl-diskless-sync-delay', '0'])
    replica = await startRedisServer(['--replicaof', '127.0.0.1', String(primary.port)])
    client = new Redis(primary.url)
  })
  after(async () => {
    client.disconnect()
    await Promise.all([replica?.stop(), primary?.stop()])
  })

  it('keys and peek read the replica: no script that may write runs there', async () => {
    const prefix = 'replica'
    const store = redisStore(client, { prefix })
    const api = createRateLimiter({ store, name: 'api', limit: 5, window: '1m', logger: quiet })
    const bulk = createRateLimiter({
      store,
      ...{ name: 'bulk', limit: 50, window: '1h', algorithm: 'bucketed', buckets: 12 },
      logger: quiet,
    })
    for (let i = 0; i < 3; i++) await api.consume({ tenant: 'acme', route: '*' })
    for (let i = 0; i < 7; i++) await bulk.consume('acme')
    const parallel = createRateLimiter({ store, name: 'par', concurrency: 3, logger: quiet })
    for (let i = 0; i < 2; i++) await parallel.consume('acme')
    const quota = createRateLimiter({
      store,
      ...{ name: 'quota', limit: 3, period: 'day', timeZone: 'Pacific/Auckland' },
      logger: quiet,
    })
    for (let i = 0; i < 2; i++) await quota.consume('acme')
    // Returns once the replica has acknowledged every write before it (0: no timeout), whenever its sync ends.
    expect(await client.call('WAIT', '1', '0')).to.equal(1)
    const target = ['--redis', replica.url, '--prefix', prefix]

    const listed = await runCli(['keys', '--json', ...target])
    expect(listed.stderr).to.equal('')
    const { keys } = JSON.parse(listed.stdout) as { keys: { key: string; used: number; pausedMs: number }[] }
    expect(keys.map(({ key, used, pausedMs }) => ({ key, used, pausedMs }))).to.deep.equal([
      { key: 'replica:api~sl3-60000:{acme}:*', used: 3, pausedMs: 0 },
      { key: 'replica:bulk~bw1-3600000-12:{acme}', used: 7, pausedMs: 0 },
      { key: 'replica:par~if1-60000:{acme}', used: 2, pausedMs: 0 },
      { key: 'replica:quota~pd1-day-Pacific/Auckland:{acme}', used: 2, pausedMs: 0 },
    ])

    const peek = await runCli([
      'peek',
      'acme',
      '--route',
      '*',
      '--policy',
      'api',
      '--window',
      '1m',
      '--limit',
      '5',
      ...target,
    ])
    expect(peek.stderr).to.equal('')
    const lines = peek.stdout.trimEnd().split('\n')
    expect(lines.slice(0, 3)).to.deep.equal([
      'key        replica:api~sl3-60000:{acme}:*',
      'policy     api, window 1m, limit 5',
      'used       3 of 5 (2 remaining)',
    ])
    expect(lines.slice(4)).to.deep.equal(['paused     no', 'next call  admitted'])
    const bucketed = ['--policy', 'bulk', '--window', '1h', '--algorithm', 'bucketed', '--buckets', '12']
    const peekBulk = await runCli(['peek', 'acme', ...bucketed, '--limit', '50', '--json', ...target])
    expect(peekBulk.stderr).to.equal('')
    expect(JSON.parse(peekBulk.stdout)).to.deep.include({ used: 7, remaining: 43, allowed: true, pausedMs: 0 })
    const daily = ['--policy', 'quota', '--period', 'day', '--time-zone', 'Pacific/Auckland', '--limit', '3']
    const peekQuota = await runCli(['peek', 'acme', ...daily, '--json', ...target])
    expect(peekQuota.stderr).to.equal('')
    expect(JSON.parse(peekQuota.stdout)).to.deep.include({
      used: 2,
      remaining: 1,
      allowed: true,
      periodStart: localDay('Pacific/Auckland', Date.now()).start,
    })

    // A write is refused there, saying where to send it.
    expect(
      await runCli(['reset', 'acme', '--route', '*', '--policy', 'api', '--window', '1m', ...target]),
    ).to.deep.equal({
      code: 1,
      stdout: '',
      stderr: `fleetlimit: Redis at ${replica.url} is a read-only replica: reset writes, give --redis the primary\n`,
    })
  })
})

const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** An instant's offset in `zone`, as ISO 8601 writes it ('+13:00'), read from Intl. */
function offsetOf(zone: string, at: number): string {
  const name = new Intl.DateTimeFormat('en-US', { timeZone: zone, timeZoneName: 'longOffset' })
    .formatToParts(at)
    .find((part) => part.type === 'timeZoneName')?.value
  return name === 'GMT' ? '+00:00' : (name as string).slice(3)
}

/** Local midnight of a date ('YYYY-MM-DD') in `zone`, as ISO 8601 with its offset (no gap at midnight assumed). */
function midnight(zone: string, date: string): string {
  const wall = Date.parse(`${date}T00:00:00Z`)
  const minutes = (offset: string) =>
    (offset[0] === '-' ? -1 : 1) * (Number(offset.slice(1, 3)) * 60 + Number(offset.slice(4)))
  let offset = offsetOf(zone, wall)
  // The offset at the local midnight itself: one correction settles it unless it falls in a change.
  offset = offsetOf(zone, wall - minutes(offset) * 60_000)
  return `${date}T00:00:00${offset}`
}

/** The day that holds `at` in `zone`: its start and the next day's, as fleetlimit prints them. */
function localDay(zone: string, at: number) {
  const date = new Intl.DateTimeFormat('en-CA', { timeZone: zone }).format(at)
  const next = new Date(Date.parse(`${date}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10)
  return { start: midnight(zone, date), reset: midnight(zone, next) }
}

/** The month (from day `anchor`, clamped to the month's days) that holds `at` in `zone`: its start and the next's. */
function localMonth(zone: string, at: number, anchor: number) {
  const [year, month, day] = new Intl.DateTimeFormat('en-CA', { timeZone: zone }).format(at).split('-').map(Number)
  const startOf = (y: number, m: number) => {
    const days = new Date(Date.UTC(y, m, 0)).getUTCDate()
    return new Date(Date.UTC(y, m - 1, Math.min(anchor, days))).toISOString().slice(0, 10)
  }
  const y = year as number
  const m = month as number
  const here = startOf(y, m)
  const [from, to] =
    (day as number) >= Number(here.slice(8))
      ? [here, startOf(y + Math.floor(m / 12), (m % 12) + 1)]
      : [startOf(m === 1 ? y - 1 : y, m === 1 ? 12 : m - 1), here]
  return { start: midnight(zone, from), reset: midnight(zone, to) }
}
