import { expect } from 'chai'
import { createServerClock } from '../../../packages/core/src/store/server-clock.js'

describe('the server clock estimate', () => {
  it('knows nothing before a reply, then errs early: the tightest lower bound of the offset', () => {
    const clock = createServerClock()
    expect(clock.serverTimeAt(100)).to.equal(undefined)
    // Server 1,000 ms ahead; replies received 5 ms and then 1 ms after the server stamped them.
    clock.observe(1_000 + 10, 8, 15)
    expect(clock.serverTimeAt(100)).to.equal(1_095)
    clock.observe(1_000 + 20, 19, 21)
    expect(clock.serverTimeAt(100)).to.equal(1_099)
    clock.observe(1_000 + 30, 29, 40)
    expect(clock.serverTimeAt(100), 'a slower reply does not loosen the bound').to.equal(1_099)
  })

  it('follows a server clock that stepped back, within two spans of 10 s', () => {
    const clock = createServerClock()
    clock.observe(5_000, 0, 0)
    clock.observe(3_000 + 10_001, 10_000, 10_001)
    expect(clock.serverTimeAt(0), 'the previous span still counts').to.equal(5_000)
    clock.observe(3_000 + 20_002, 20_001, 20_002)
    expect(clock.serverTimeAt(0)).to.equal(3_000)
  })

  it('from replies read long after their calls were sent, errs late by at most their round trip, until one is read in time', () => {
    const clock = createServerClock()
    // Server 1,000 ms ahead; the reply was made at once, and read 300 ms later by a busy event loop: a lower bound
    // from it would put a deadline 300 ms early, so the upper bound stands in.
    clock.observe(1_000 + 1, 0, 301)
    expect(clock.serverTimeAt(400), 'the lowest upper bound').to.equal(1_401)
    clock.observe(1_000 + 60, 50, 250)
    expect(clock.serverTimeAt(400), 'a looser upper bound changes nothing').to.equal(1_401)
    clock.observe(1_000 + 400, 399, 402)
    expect(clock.serverTimeAt(500), 'a reply read in time: the lower bound').to.equal(1_498)
    clock.observe(1_000 + 500, 450, 800)
    expect(clock.serverTimeAt(900), 'a late reply changes nothing').to.equal(1_898)
  })

  it('keeps the upper bound of late replies within two spans of 10 s, as it keeps the lower', () => {
    const clock = createServerClock()
    // A server clock 3 s ahead that then steps forward to 5 s ahead; every reply read 100 ms after its call.
    clock.observe(3_000, 0, 100)
    clock.observe(5_000 + 10_000, 10_000, 10_100)
    expect(clock.serverTimeAt(0), 'the previous span still counts').to.equal(3_000)
    clock.observe(5_000 + 20_200, 20_200, 20_300)
    expect(clock.serverTimeAt(0), 'the older span is dropped').to.equal(5_000)
  })
})
