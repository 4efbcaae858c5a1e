import { definePolicy, memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'
import { type Exchange, flavours, type SharedOptions } from '../support/adapter-harness.js'
import { adapterStores } from '../support/adapter-stores.js'

type WithHeaders = { readonly headers: Record<string, string | string[] | undefined> }

const PLANS: Record<string, number> = { free: 2, pro: 4 }

describe('adapters: per-tenant limits from limit(req)', () => {
  const stores = adapterStores()

  for (const flavour of flavours) {
    for (const kind of stores) {
      it(`${flavour.name} (${kind.name}): each plan its limit, in the decision and the headers`, async () => {
        const shared = {
          store: kind.make(),
          limit: (req: WithHeaders) => PLANS[String(req.headers['x-plan'])] ?? 1,
        } as unknown as SharedOptions
        const app = await flavour.build({
          shared,
          app: definePolicy({ name: 'plans', limit: 1_000, window: '1m' }),
          tenantFromQuery: true,
        })
        try {
          const statuses = async (tenant: string, plan: string, n: number) => {
            const seen: Exchange[] = []
            for (let i = 0; i < n; i++) seen.push(await app.request('GET', `/search?t=${tenant}`, { 'x-plan': plan }))
            return seen
          }
          const free = await statuses('a', 'free', 3)
          const pro = await statuses('b', 'pro', 5)
          expect(free.map((e) => e.status)).to.deep.equal([200, 200, 429])
          expect(pro.map((e) => e.status)).to.deep.equal([200, 200, 200, 200, 429])
          expect(free[0]?.headers['ratelimit-policy']).to.equal('"plans";q=2;w=60')
          expect(pro[0]?.headers.ratelimit).to.match(/^"plans";r=3;t=\d+$/)
          // The upgrade admits the difference at once.
          expect((await statuses('a', 'pro', 3)).map((e) => e.status)).to.deep.equal([200, 200, 429])
        } finally {
          await app.close()
        }
      })
    }

    it(`${flavour.name}: a limit(req) result that is not a limit fails that request alone, with a 500`, async () => {
      const shared = {
        store: memoryStore(),
        limit: (req: WithHeaders) => (req.headers['x-plan'] === 'bad' ? Number.NaN : 5),
        logger: { warn() {} },
      } as unknown as SharedOptions
      const app = await flavour.build({ shared, app: definePolicy({ limit: 10, window: '1m' }), tenantFromQuery: true })
      try {
        expect((await app.request('GET', '/search?t=a', { 'x-plan': 'bad' })).status).to.equal(500)
        expect((await app.request('GET', '/search?t=a', { 'x-plan': 'ok' })).status).to.equal(200)
      } finally {
        await app.close()
      }
    })
  }

  it('with inline options and a limit function, the policy is named for its window', async () => {
    const { rateLimit } = await import('@fleetlimit/express')
    const { createHttpLimiter } = await import('@fleetlimit/core/http')
    const http = createHttpLimiter<WithHeaders>(
      { limit: () => 3, window: '10s' },
      { name: 'Test', trustProxyHint: '', trustAllHint: '' },
    )
    expect(http.limiter.policy).to.include({ name: 'plan-per-10000ms', window: 10_000 })
    expect(() => rateLimit({ limit: 'many' as unknown as number, window: '1m' })).to.throw(/limit/)
  })
})
