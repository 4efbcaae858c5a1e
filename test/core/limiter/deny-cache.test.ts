import { expect } from 'chai'
import type { Decision } from '../../../packages/core/src/limiter/decision.js'
import { createDenyCache, type DenyEntry } from '../../../packages/core/src/limiter/deny-cache.js'

const decision: Decision = {
  allowed: false,
  limit: 1,
  remaining: 0,
  retryAfterMs: 1_000,
  resetMs: 1_000,
  source: 'store',
  policy: 'p',
}
const entry = (): DenyEntry => ({
  until: 1_000,
  cost: 1,
  limits: '1,1',
  decision,
  at: 0,
  dropped: false,
  aged: undefined,
})

/** The id of a two-policy call of tenant `i`: its global key and its route key, joined by a space. */
const compound = (i: number) => `g:{t${i}} s:{t${i}}:GET%20/search`

describe('deny cache', () => {
  it('a key change looks only at the entries of its keys, with 10 000 compound denials cached', () => {
    const cache = createDenyCache(20_000)
    for (let i = 0; i < 10_000; i++) cache.set(compound(i), entry())
    cache.set('g:{t1}', entry())

    cache.dropKeys(['g:{t5}'])
    expect(cache.visits, 'one compound denial names g:{t5}').to.equal(1)
    cache.dropKeys(['g:{t1}', 's:{t7}:GET%20/search', 'g:{unknown}'])
    expect(cache.visits, 'g:{t1} alone, its compound denial, and t7’s').to.equal(4)
    expect(cache.size).to.equal(10_001 - 4)
  })

  it('drops exactly the entries that name a changed key, every policy of a compound one with it, and no other', () => {
    const cache = createDenyCache(100)
    const ids = ['a b', 'a c', 'b c', 'a', 'c', 'd e', 'ab x', 'x ab']
    for (const id of ids) cache.set(id, entry())
    cache.dropKeys(['a'])
    expect(ids.filter((id) => cache.get(id) !== undefined)).to.deep.equal(['b c', 'c', 'd e', 'ab x', 'x ab'])
    cache.dropKeys(['e', 'x'])
    expect(ids.filter((id) => cache.get(id) !== undefined)).to.deep.equal(['b c', 'c'])
    cache.dropKeys(['c'])
    expect(cache.size).to.equal(0)
  })

  it('forgets the keys of an entry deleted, evicted, replaced or cleared, so a change does not visit it', () => {
    const cache = createDenyCache(2)
    cache.set('a b', entry())
    cache.set('c d', entry())
    cache.set('e f', entry())
    expect(cache.get('a b'), 'evicted: the least recently used').to.equal(undefined)
    cache.delete('c d')
    cache.set('e f', entry())
    cache.dropKeys(['a', 'b', 'c', 'd'])
    expect(cache.visits).to.equal(0)
    cache.dropKeys(['f'])
    expect(cache.visits, 'e f, cached twice, is one entry').to.equal(1)
    cache.set('g h', entry())
    cache.clear()
    cache.dropKeys(['g', 'h'])
    expect([cache.visits, cache.size]).to.deep.equal([1, 0])
  })

  it('marks every entry it lets go as dropped (a plan that kept one looks it up again), and a cached one as not', () => {
    const cache = createDenyCache(2)
    const [evicted, deleted, replaced, keyed, cleared] = [entry(), entry(), entry(), entry(), entry()]
    cache.set('a', evicted)
    cache.set('b', deleted)
    cache.set('c', replaced)
    cache.delete('b')
    cache.set('c', entry())
    cache.set('d e', keyed)
    cache.dropKeys(['e'])
    cache.set('f', cleared)
    cache.clear()
    expect([evicted, deleted, replaced, keyed, cleared].map((e) => e.dropped)).to.deep.equal([
      true,
      true,
      true,
      true,
      true,
    ])
    const again = entry()
    again.dropped = true
    cache.set('g', again)
    expect(again.dropped, 'set again: cached').to.equal(false)
  })
})
