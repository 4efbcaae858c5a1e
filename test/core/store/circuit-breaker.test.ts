import { expect } from 'chai'
import sinon from 'sinon'
import { createCircuitBreaker } from '../../../packages/core/src/store/circuit-breaker.js'

describe('circuit breaker (injected clock)', () => {
  it('opens after the threshold of consecutive failures, probes once after the cool-down, and closes', () => {
    let now = 0
    const breaker = createCircuitBreaker({ failureThreshold: 3, cooldownMs: 1_000 }, () => now)
    const opened = sinon.fake()
    const closed = sinon.fake()
    breaker.on('open', opened)
    breaker.on('close', closed)

    breaker.failure()
    breaker.failure()
    breaker.success() // consecutive failures only
    breaker.failure()
    breaker.failure()
    expect(breaker.state).to.equal('closed')
    breaker.failure()
    expect(breaker.state).to.equal('open')
    expect(opened.callCount).to.equal(1)
    expect(breaker.tryAcquire()).to.equal(false)
    expect(breaker.msUntilProbe()).to.equal(1_000)

    now = 999
    expect(breaker.tryAcquire()).to.equal(false)
    now = 1_000
    expect(breaker.tryAcquire(), 'the probe').to.equal(true)
    expect(breaker.state).to.equal('half-open')
    expect(breaker.tryAcquire(), 'only one probe at a time').to.equal(false)
    breaker.failure()
    expect(breaker.state).to.equal('open')
    expect(opened.callCount, 'a failed probe is the same outage').to.equal(1)
    expect(breaker.openings).to.equal(1)

    now = 2_000
    expect(breaker.tryAcquire()).to.equal(true)
    breaker.success()
    expect(breaker.state).to.equal('closed')
    expect(closed.callCount).to.equal(1)
    expect(breaker.tryAcquire()).to.equal(true)
  })

  it('probeNow lets an open breaker probe at once; it does nothing to a closed or half-open one', () => {
    let now = 0
    const breaker = createCircuitBreaker({ failureThreshold: 1, cooldownMs: 1_000 }, () => now)
    breaker.probeNow()
    expect(breaker.state).to.equal('closed')
    breaker.failure()
    now = 10
    expect(breaker.tryAcquire(), 'in the cool-down').to.equal(false)
    breaker.probeNow()
    expect(breaker.msUntilProbe()).to.equal(0)
    expect(breaker.tryAcquire(), 'the probe').to.equal(true)
    expect(breaker.state).to.equal('half-open')
    breaker.probeNow()
    expect(breaker.tryAcquire(), 'still one probe at a time').to.equal(false)
    breaker.failure()
    expect(breaker.msUntilProbe(), 'a failed probe waits a full cool-down again').to.equal(1_000)
    expect(breaker.openings).to.equal(1)
  })

  it('rejects invalid thresholds with a coded error', () => {
    expect(() => createCircuitBreaker({ failureThreshold: 0 })).to.throw(/breaker.failureThreshold/)
    expect(() => createCircuitBreaker({ cooldownMs: -1 })).to.throw(/breaker.cooldownMs/)
    expect(() => createCircuitBreaker({ threshold: 2 } as never)).to.throw(/breaker.threshold/)
  })
})
