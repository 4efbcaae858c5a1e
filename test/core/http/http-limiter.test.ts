import {
  createRateLimiter,
  definePolicy,
  isFleetlimitError,
  type Logger,
  memoryStore,
  type OptionError,
} from '@fleetlimit/core'
import { createHttpLimiter, ipTenant, manyMethods, type RequestInfo } from '@fleetlimit/core/http'
import { expect } from 'chai'
import sinon from 'sinon'

const framework = { name: 'Test', trustProxyHint: 'Trust it', trustAllHint: 'Trust fewer' }

describe('adapter options are validated at construction', () => {
  const cases: [object, string][] = [
    [{ limit: 5, window: '1s', headers: 'draft-9' }, 'headers'],
    [{ limit: 5, window: '1s', statusCode: 200 }, 'statusCode'],
    [{ limit: 5, window: '1s', ipv6Subnet: 0 }, 'ipv6Subnet'],
    [{ limit: 5, window: '1s', legacyHeaders: 'yes' }, 'legacyHeaders'],
    [{ limit: 5, window: '1s', tenant: 'ip' }, 'tenant'],
    [{ limit: 5, window: '1s', skip: true }, 'skip'],
    [{ limit: 5, window: '1s', message: null }, 'message'],
    [{ limit: 5, window: '1s', logger: {} }, 'logger'],
    [{ limit: 5, window: '1s', keyGenerator: () => 'x' }, 'rateLimit.keyGenerator'],
    [{ limit: 5, window: '1s', policy: definePolicy({ limit: 1, window: '1s' }) }, 'policy + limit, window'],
    [{ store: memoryStore() }, 'limit'],
    [{ limiter: {} }, 'limiter'],
  ]
  for (const [options, option] of cases) {
    it(`rejects ${option}`, () => {
      let error: unknown
      try {
        createHttpLimiter(options as never, framework)
      } catch (e) {
        error = e
      }
      expect(isFleetlimitError(error, 'ERR_FLEETLIMIT_OPTION'), String(error)).to.equal(true)
      expect((error as OptionError).option).to.equal(option)
    })
  }
})

/** A GET of /x from a client straight to the app (no proxy). */
const direct: RequestInfo = {
  ip: '203.0.113.9',
  method: 'GET',
  routePattern: '/x',
  forwardedFor: false,
  trustProxy: 'none',
  peerAddress: '203.0.113.9',
}

describe('one-time warnings about the client address', () => {
  const setup = (options: object = {}) => {
    const logger: Logger = { warn: sinon.fake() }
    const http = createHttpLimiter({ store: memoryStore(), limit: 100, window: '1m', logger, ...options }, framework)
    const said = () => (logger.warn as sinon.SinonSpy).getCalls().map((call) => String(call.args[0]))
    return { http, said, send: (info: Partial<RequestInfo>) => http.handle({}, { ...direct, ...info }) }
  }

  it('none for a direct client', async () => {
    const { send, said } = setup()
    for (let i = 0; i < 3; i++) await send({})
    expect(said()).to.deep.equal([])
  })

  it('trusting every proxy: once, naming the spoofing and what to set instead', async () => {
    const { send, said } = setup()
    for (let i = 0; i < 3; i++) await send({ trustProxy: 'all', forwardedFor: i > 0, ip: `10.0.0.${i}` })
    expect(said()).to.have.length(1)
    expect(said()[0]).to.match(/^fleetlimit: Test trusts X-Forwarded-For from any peer/)
    expect(said()[0]).to.include('spoof X-Forwarded-For').and.include('Trust fewer')
  })

  it('a peer sending X-Forwarded-For that the framework does not list as a proxy: once, with the hint', async () => {
    const { send, said } = setup()
    const proxied = { trustProxy: 'some', forwardedFor: true, ip: '10.0.0.1', peerAddress: '10.0.0.1' } as const
    for (let i = 0; i < 3; i++) await send(proxied)
    await send({ ...proxied, ip: '198.51.100.1' })
    expect(said()).to.have.length(1)
    expect(said()[0]).to.include('"10.0.0.1"').and.include('does not trust as a proxy').and.include('Trust it')
  })

  it('a framework with no trust-proxy setting (no hints): X-Forwarded-For gets the tenant(req) advice, once', async () => {
    const logger: Logger = { warn: sinon.fake() }
    const http = createHttpLimiter({ store: memoryStore(), limit: 100, window: '1m', logger }, { name: 'node:http' })
    for (let i = 0; i < 3; i++) await http.handle({}, { ...direct, forwardedFor: true, peerAddress: '10.0.0.1' })
    expect((logger.warn as sinon.SinonSpy).getCalls().map((call) => call.args[0])).to.deep.equal([
      'fleetlimit: a request carries X-Forwarded-For but node:http does not trust a proxy, so every client behind ' +
        'the proxy shares one limit. node:http has no trust-proxy setting: pass tenant(req) that returns ' +
        "ipTenant(address) from '@fleetlimit/core/http' of the address your proxy appends to X-Forwarded-For, " +
        'its last entry behind one proxy (a client can write any entry before it).',
    ])
  })

  it('a client address that is not an IP: once, quoted and escaped, and short', async () => {
    const { send, said } = setup()
    await send({ ip: `evil\nfleetlimit: forged line ${'x'.repeat(1_000)}` })
    await send({ ip: 'also-not-an-ip' })
    expect(said()).to.have.length(1)
    expect(said()[0]).to.include('not an IP address').and.include('"evil\\nfleetlimit: forged line')
    expect(said()[0]).not.to.include('\n')
    expect(said()[0]?.length).to.be.below(500)
  })

  it('an address with a port is an address: no warning, and one window for every port', async () => {
    const { send, said } = setup({ limit: 2 })
    const decisions = []
    for (let port = 1; port <= 4; port++) decisions.push(await send({ ip: `1.2.3.4:${port}` }))
    expect(decisions.map((d) => d.action)).to.deep.equal(['next', 'next', 'respond', 'respond'])
    expect(said()).to.deep.equal([])
  })

  it('none of these when tenant(req) decides who is limited', async () => {
    const { send, said } = setup({ tenant: () => 'account-1' })
    await send({ trustProxy: 'all', forwardedFor: true, ip: 'not-an-ip' })
    expect(said()).to.deep.equal([])
  })

  it('a custom tenant(req) that returns a bare IPv6 address: once, with the code and ipTenant', async () => {
    const tenants = ['2001:db8::1', '2001:db8::2', 'key-1', '::ffff:192.0.2.1']
    let next = 0
    const { send, said } = setup({ tenant: () => tenants[next++ % tenants.length] })
    for (let i = 0; i < tenants.length; i++) await send({})
    expect(said()).to.deep.equal([
      'fleetlimit: tenant(req) returned the IPv6 address "2001:db8::1" as it is (ERR_FLEETLIMIT_TENANT_IPV6): a ' +
        'client holds a /64 or more of them and escapes its limit by changing address. Group it as the default ' +
        "tenant does: ipTenant(ip) from '@fleetlimit/core/http', as in tenant: (req) => req.get('x-api-key') ?? " +
        'ipTenant(req.ip).',
    ])
  })

  it('no IPv6 warning for grouped addresses, IPv4, keys, or IPv4-mapped IPv6', async () => {
    const tenants = [ipTenant('2001:db8::1'), '192.0.2.1', 'acct:42', '::ffff:192.0.2.1', 'not:an:ip::x']
    let next = 0
    const { send, said } = setup({ tenant: () => tenants[next++ % tenants.length] })
    for (let i = 0; i < tenants.length; i++) await send({})
    expect(tenants[0]).to.equal('2001:db8:0:0:0:0:0:0/56')
    expect(said()).to.deep.equal([])
  })

  it('limiters sharing one set of warnings warn once for all', async () => {
    const logger: Logger = { warn: sinon.fake() }
    const warned = new Set<string>()
    const make = () => createHttpLimiter({ limit: 5, window: '1m', logger }, framework, warned)
    for (const http of [make(), make()]) await http.handle({}, { ...direct, trustProxy: 'all' })
    expect((logger.warn as sinon.SinonSpy).callCount).to.equal(1)
  })
})

describe('the default route key', () => {
  const info = (method: string, extra: Partial<RequestInfo>): RequestInfo => ({
    ...direct,
    method,
    routePattern: '/op',
    ...extra,
  })

  it('joins the method for a route of one method (HEAD as GET), not for a route of several', async () => {
    const limiter = createRateLimiter({ store: memoryStore(), name: 'op', limit: 5, window: '1m' })
    const consume = sinon.spy(limiter, 'consume')
    const http = createHttpLimiter({ limiter }, framework)
    for (const [method, extra] of [
      ['HEAD', {}],
      ['POST', {}],
      ['DELETE', { manyMethods: true }],
      ['GET', { routePattern: undefined, manyMethods: true }],
    ] as const) {
      await http.handle({}, info(method, extra))
    }
    expect(consume.args.map(([key]) => key)).to.deep.equal([
      { tenant: '203.0.113.9', route: 'GET /op' },
      { tenant: '203.0.113.9', route: 'POST /op' },
      { tenant: '203.0.113.9', route: '* /op' },
      { tenant: '203.0.113.9', route: '*' },
    ])
  })

  it('manyMethods: more than one method, in any letter case, HEAD counting as GET', () => {
    expect(manyMethods([])).to.equal(false)
    expect(manyMethods(['get'])).to.equal(false)
    expect(manyMethods(['HEAD', 'GET'])).to.equal(false)
    expect(manyMethods(['get', 'GET', 'head'])).to.equal(false)
    expect(manyMethods(['HEAD', 'POST'])).to.equal(true)
    expect(manyMethods(['GET', 'post'])).to.equal(true)
  })
})

describe('limit(req) with inline options: the policy has no limit of its own', () => {
  const info = direct
  const PLANS: Record<string, number> = { free: 2 }
  const planned = (plan: (name: string | undefined) => unknown) =>
    createHttpLimiter<{ plan?: string }>(
      { store: memoryStore(), window: '1m', limit: (req) => plan(req.plan) as number, logger: { warn() {} } },
      framework,
    )
  const statuses = async (http: ReturnType<typeof planned>, plan: string | undefined, n: number) => {
    const seen: (number | string)[] = []
    for (let i = 0; i < n; i++) {
      const outcome = await http.handle(plan === undefined ? {} : { plan }, info)
      seen.push(outcome.action === 'respond' ? outcome.status : outcome.action)
    }
    return seen
  }

  it('a map naming the policy gives its limit', async () => {
    const http = planned((plan) => ({ 'plan-per-60000ms': PLANS[plan ?? ''] }))
    expect(await statuses(http, 'free', 3)).to.deep.equal(['next', 'next', 429])
  })

  it('a map that leaves the policy out, or gives it undefined, fails the request as an undefined number does', async () => {
    const results: unknown[] = [undefined, { 'plan-per-60000ms': undefined }, {}, { other: 5 }, new Map()]
    for (const result of results) {
      const http = planned(() => result)
      const outcome = await http.handle({}, info)
      expect(outcome.action === 'respond' && outcome.status, String(result)).to.equal(500)
      if (outcome.action !== 'respond') continue
      expect(JSON.parse(outcome.body)).to.include({ code: 'ERR_FLEETLIMIT_OPTION' })
      expect(outcome.body).to.include('invalid `limit(req)`')
      expect(http.limiter.stats().decisions, 'nothing was decided').to.equal(0)
    }
    const http = planned((plan) => ({ 'plan-per-60000ms': PLANS[plan ?? ''] }))
    expect(await statuses(http, 'enterprise', 2)).to.deep.equal([500, 500])
  })
})

describe('a calendar policy’s headers', () => {
  it('name the period’s nominal length as w, and wait until the next local midnight', async () => {
    // 2024-03-09 18:00 in New York (EST, -5): midnight comes in 6 hours; the next day is 23 hours long.
    const now = Date.parse('2024-03-09T23:00:00Z')
    const http = createHttpLimiter(
      { store: memoryStore({ clock: () => now }), limit: 1, period: 'day', timeZone: 'America/New_York' },
      framework,
    )
    const first = await http.handle({}, direct)
    expect(first.headers).to.deep.include({
      'ratelimit-policy': '"1-per-day";q=1;w=86400',
      ratelimit: `"1-per-day";r=0;t=${6 * 3600}`,
    })
    const denied = await http.handle({}, direct)
    expect(denied.action === 'respond' && denied.status).to.equal(429)
    expect(denied.headers['retry-after']).to.equal(String(6 * 3600))
  })
})
