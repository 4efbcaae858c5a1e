// The ideal scheduler of the LLM-shaped workload: the upstream's window counting, the limiter's window of
// reservations, and a run small enough to follow by hand.
import { expect } from 'chai'
import { TOKEN_SCENARIO, type TokenScenario } from '../../bench/outbound-tokens.js'
import { IDEAL_ORDERS, simulateIdeal } from '../../bench/outbound-tokens-ideal.js'
import { countArrivals, slidingSum } from '../../bench/outbound-tokens-upstream.js'

/**
 * One loop for 4 s (measured from 2 s) whose calls all cost the same: sigma 0 makes every prompt 100 tokens and
 * every completion 80, answered after 30 + 8 ms, with a bound of 700.
 */
const oneLoopOfFixedCosts = (overrides: Partial<TokenScenario>): TokenScenario => ({
  ...TOKEN_SCENARIO,
  workers: 1,
  concurrency: 1,
  durationMs: 4_000,
  warmUpMs: 2_000,
  prompt: { median: 100, sigma: 0, max: 600 },
  completion: { median: 80, sigma: 0, maxTokens: 600 },
  ...overrides,
})

describe('bench: the ideal token scheduler', () => {
  it('countArrivals counts each window of arrivals, a 429 for each over the limit, and usage after the warm-up', () => {
    const arrivals = countArrivals(1_000, 550)
    expect(arrivals.counting(0)).to.equal(false)
    arrivals.start(0, 2_000, 1_000)
    expect([
      arrivals.counting(-1),
      arrivals.counting(0),
      arrivals.counting(1_999),
      arrivals.counting(2_000),
    ]).to.deep.equal([false, true, true, false])
    arrivals.add(0, 100)
    arrivals.add(500, 200)
    // 600 in (-1, 999]: over the limit.
    arrivals.add(999, 300)
    // The arrival at 0 has left the window of 1000: 550, at the limit.
    arrivals.add(1_000, 50)
    arrivals.add(1_500, 10)
    expect(arrivals.counts()).to.deep.equal({
      requests: 5,
      refused: 1,
      usedShare: 60 / 550,
      peakShare: 600 / 550,
      meanCost: 660 / 5,
    })
  })

  it('slidingSum holds each admission for its span, at its bound until it settles', () => {
    const reservations = slidingSum(1_020)
    expect(reservations.nextExpiry()).to.equal(Number.POSITIVE_INFINITY)
    const first = reservations.add(0, 700)
    const second = reservations.add(38, 700)
    expect(reservations.at(38)).to.equal(1_400)
    reservations.settle(first, 180)
    expect(reservations.at(40)).to.equal(880)
    expect(reservations.nextExpiry()).to.equal(1_020)
    expect(reservations.at(1_019)).to.equal(880)
    expect(reservations.at(1_020)).to.equal(700)
    // Settling an entry that has left the window changes nothing.
    reservations.settle(first, 0)
    expect(reservations.at(1_020)).to.equal(700)
    reservations.settle(second, 180)
    expect(reservations.at(1_057)).to.equal(180)
    expect(reservations.at(1_058)).to.equal(0)
    expect(reservations.nextExpiry()).to.equal(Number.POSITIVE_INFINITY)
  })

  it('one loop of fixed costs: two calls a window, the third waits for the first to leave it', () => {
    const scenario = oneLoopOfFixedCosts({ limit: 1_000, transitMs: 0 })
    // Admitted at 0 and 38 (700 + 180 fits), then at 1000 and 1038, 2000 and 2038, 3000 and 3038; the call started
    // at 3076 still waits at the end.
    expect(simulateIdeal(scenario, { order: 'fifo' })).to.deep.equal({
      requests: 8,
      refused: 0,
      usedShare: 720 / (1_000 * 2),
      peakShare: 360 / 1_000,
      meanCost: 180,
      calls: 9,
      meanReserved: 700,
      meanSettled: 180,
      inFlightExcessShare: (8 * 520 * 38_000) / 4_000_000 / 1_000,
      ceiling: 1 - (8 * 520 * 38_000) / 4_000_000 / 1_000,
      excessPerAdmission: 520 / 1_000,
      latestExcessShare: 520 / 1_000,
    })
  })

  it('a limit that no call waits for: the loop calls back to back until the end', () => {
    const scenario = oneLoopOfFixedCosts({ limit: 100_000 })
    // Admitted every 38 ms from 0 to 3990 (106 calls), 53 of them from 2014 on; the last is answered after the end.
    const result = simulateIdeal(scenario, { order: 'fifo' })
    expect([result.calls, result.requests, result.usedShare, result.peakShare, result.refused]).to.deep.equal([
      106,
      106,
      (53 * 180) / (100_000 * 2),
      (27 * 180) / 100_000,
      0,
    ])
  })

  it('never lets a window of arrivals go over the limit, in any order, on any of ten seeds', () => {
    for (const order of IDEAL_ORDERS)
      for (let seed = 40; seed < 50; seed++) {
        const result = simulateIdeal({ ...TOKEN_SCENARIO, seed }, { order })
        expect([result.refused, result.peakShare <= 1], `${order}, seed ${seed}`).to.deep.equal([0, true])
      }
  })
})
