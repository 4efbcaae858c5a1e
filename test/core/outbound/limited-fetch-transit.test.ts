import { createRateLimiter, definePolicy, limitedFetch, memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'

// An upstream counts a request when it arrives, up to transitMs after its admission: the unit counts that long
// beyond the window, so a quota of the same limit and window is never exceeded by arrivals bunched in transit.
describe('limitedFetch: a unit counts from its admission until transitMs plus a window', () => {
  it('with the default 100 ms, two admissions at 0 still fill a 2-per-second window at 1 099 ms, not at 1 100', async () => {
    let now = 0
    const limiter = createRateLimiter({ store: memoryStore({ clock: () => now }), limit: 2, window: '1s' })
    const sent: string[] = []
    const fetch = async (input: string | URL | Request) => {
      sent.push(String(input))
      return new Response('ok')
    }
    const upstream = limitedFetch(limiter, { key: 'api', fetch })
    await upstream('https://api.example/a')
    await upstream('https://api.example/b')
    expect(sent).to.deep.equal(['https://api.example/a', 'https://api.example/b'])
    now = 1_000
    expect(await limiter.peek('api')).to.include({ allowed: false, remaining: 0, retryAfterMs: 100 })
    now = 1_099
    expect(await limiter.peek('api')).to.include({ allowed: false, remaining: 0 })
    now = 1_100
    expect(await limiter.peek('api')).to.include({ allowed: true, remaining: 2 })
  })

  it('transitMs: 0 counts from the admission for a window, as acquire alone does', async () => {
    let now = 0
    const limiter = createRateLimiter({ store: memoryStore({ clock: () => now }), limit: 2, window: '1s' })
    const upstream = limitedFetch(limiter, { key: 'api', transitMs: 0, fetch: async () => new Response('ok') })
    await upstream('https://api.example/a')
    now = 1_000
    expect(await limiter.peek('api')).to.include({ allowed: true, remaining: 2 })
  })

  it('a limiter that cannot count a unit longer (several policies) gets no transit by default', async () => {
    const policies = [
      definePolicy({ name: 'a', limit: 2, window: '1s' }),
      definePolicy({ name: 'b', limit: 5, window: '1m' }),
    ]
    const limiter = createRateLimiter({ store: memoryStore(), policies })
    const upstream = limitedFetch(limiter, { key: 'api', fetch: async () => new Response('ok') })
    expect((await upstream('https://api.example/a')).status).to.equal(200)
    const explicit = limitedFetch(limiter, { key: 'api', transitMs: 100, fetch: async () => new Response('ok') })
    const error = await explicit('https://api.example/a').catch((e: unknown) => e)
    expect(error).to.have.property('code', 'ERR_FLEETLIMIT_OPTION')
  })
})
