import { definePolicy, memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'
import { comparable, type Exchange, flavours, type SharedOptions } from '../support/adapter-harness.js'

/**
 * An app-wide limiter and a per-route one on the same request: Express and Koa app.use plus route middleware,
 * Fastify two registrations (the second in preHandler).
 */
const stacked = (app: { limit: number }, route: { limit: number }, shared: SharedOptions = {}) => ({
  shared: { store: memoryStore(), ...shared },
  app: definePolicy({ name: 'app-wide', limit: app.limit, window: '1m' }),
  route: definePolicy({ name: 'search', limit: route.limit, window: '1m' }),
  stacked: true,
})

describe('adapters: stacked limiters list every policy that applied', () => {
  for (const flavour of flavours) {
    describe(flavour.name, () => {
      it('draft-8: each admitted response lists both, a denial by the app-wide one lists what applied', async () => {
        const app = await flavour.build(stacked({ limit: 3 }, { limit: 100 }))
        try {
          const seen: Exchange[] = []
          for (let i = 0; i < 4; i++) seen.push(await app.request('GET', '/search'))
          expect(seen.map((e) => e.status)).to.deep.equal([200, 200, 200, 429])
          expect(seen[0]?.headers['ratelimit-policy']).to.equal('"app-wide";q=3;w=60, "search";q=100;w=60')
          expect(seen.slice(0, 3).map((e) => e.headers.ratelimit)).to.deep.equal([
            '"app-wide";r=2;t=60, "search";r=99;t=60',
            '"app-wide";r=1;t=60, "search";r=98;t=60',
            '"app-wide";r=0;t=60, "search";r=97;t=60',
          ])
          const denied = seen[3] as Exchange
          expect(denied.headers['ratelimit-policy'], 'the route limiter did not run').to.equal('"app-wide";q=3;w=60')
          expect(denied.headers.ratelimit).to.equal('"app-wide";r=0;t=60')
          expect(denied.headers['retry-after']).to.equal('60')
        } finally {
          await app.close()
        }
      })

      it("draft-8: a denial by the route's limiter keeps the app-wide items", async () => {
        const app = await flavour.build(stacked({ limit: 100 }, { limit: 2 }))
        try {
          await app.request('GET', '/search')
          await app.request('GET', '/search')
          const denied = await app.request('GET', '/search')
          expect(denied.status).to.equal(429)
          expect(denied.headers['ratelimit-policy']).to.equal('"app-wide";q=100;w=60, "search";q=2;w=60')
          expect(denied.headers.ratelimit).to.equal('"app-wide";r=97;t=60, "search";r=0;t=60')
          expect(denied.headers['retry-after']).to.equal('60')
          expect(JSON.parse(denied.body)['violated-policies']).to.deep.equal(['search'])
        } finally {
          await app.close()
        }
      })

      it('draft-6 and draft-7: one limit, the one with fewer left; RateLimit-Policy lists both', async () => {
        const six = await flavour.build(
          stacked({ limit: 3 }, { limit: 100 }, { headers: 'draft-6', legacyHeaders: true }),
        )
        const seven = await flavour.build(stacked({ limit: 100 }, { limit: 5 }, { headers: 'draft-7' }))
        try {
          const first = await six.request('GET', '/search')
          expect(first.headers).to.include({
            'ratelimit-limit': '3',
            'ratelimit-remaining': '2',
            'ratelimit-reset': '60',
            'ratelimit-policy': '3;w=60, 100;w=60',
            'x-ratelimit-limit': '3',
            'x-ratelimit-remaining': '2',
          })
          const admitted = await seven.request('GET', '/search')
          expect(admitted.headers).to.include({
            ratelimit: 'limit=5, remaining=4, reset=60',
            'ratelimit-policy': '100;w=60, 5;w=60',
          })
        } finally {
          await six.close()
          await seven.close()
        }
      })
    })
  }

  it('every framework sends the same bytes', async () => {
    const transcripts: Exchange[][] = []
    for (const flavour of flavours) {
      const app = await flavour.build(stacked({ limit: 2 }, { limit: 1 }))
      const transcript: Exchange[] = []
      for (let i = 0; i < 3; i++) transcript.push(comparable(await app.request('GET', '/search')))
      transcripts.push(transcript)
      await app.close()
    }
    const [reference, ...others] = transcripts
    expect(reference?.map((e) => [e.status, e.headers.ratelimit])).to.deep.equal([
      [200, '"app-wide";r=1;t=60, "search";r=0;t=60'],
      [429, '"app-wide";r=0;t=60, "search";r=0;t=60'],
      [429, '"app-wide";r=0;t=60'],
    ])
    for (const [i, transcript] of others.entries()) {
      expect(transcript, (flavours[i + 1] as { name: string }).name).to.deep.equal(reference)
    }
  })
})
