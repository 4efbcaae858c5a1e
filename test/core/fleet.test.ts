import { runFleet } from '@fleetlimit/test-kit/fleet'
import { expect } from 'chai'
import { redisUrl } from '../support/root-hooks.js'

describe('a fleet of processes on one Redis key', function () {
  this.timeout(60_000)

  it('four processes hammering consume() never exceed the limit in any window and reach 95% of it', async () => {
    const report = await runFleet({
      redisUrl: redisUrl(),
      limit: 100,
      windowMs: 1_000,
      durationMs: 3_000,
      skewsMs: [0, 0, 0, 0],
    })
    expect(report.perWorker.every((n) => n > 0)).to.equal(true)
    expect(report.maxInWindow).to.be.at.most(100)
    expect(report.inWholeWindows).to.be.at.least(0.95 * report.idealInWholeWindows)
  })

  it('processes whose clocks are two seconds apart still hold the limit (the server clock decides)', async () => {
    const report = await runFleet({
      redisUrl: redisUrl(),
      limit: 50,
      windowMs: 1_000,
      durationMs: 2_000,
      skewsMs: [2_000, -2_000],
    })
    expect(report.perWorker.every((n) => n > 0)).to.equal(true)
    expect(report.maxInWindow).to.be.at.most(50)
    expect(report.inWholeWindows).to.be.at.least(0.95 * report.idealInWholeWindows)
  })
})
