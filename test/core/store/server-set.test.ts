import { expect } from 'chai'
import { createServerSet, guardStore, serversOf } from '../../../packages/core/src/store/server-set.js'
import { optionErrorOf } from '../../support/option-error.js'

describe('createServerSet', () => {
  it('gives each server one guard, shared by its keys, made on first use', () => {
    const servers = createServerSet({ maxInFlight: 2 }, (key) => key.slice(0, 1))
    const a = servers.for('a:1')
    expect(servers.for('a:2')).to.equal(a)
    expect(servers.for('b:1')).to.not.equal(a)
    expect(a.answeredAt).to.equal(Number.NEGATIVE_INFINITY)
  })

  it('reports the worst state of the servers called lately, counts openings, and tells opens and closes', () => {
    let now = 0
    const servers = createServerSet(
      { breaker: { failureThreshold: 1, cooldownMs: 1_000 } },
      (key) => key,
      () => now,
    )
    const heard: string[] = []
    servers.on('open', () => heard.push('open'))
    servers.on('close', () => heard.push('close'))
    servers.for('a')
    servers.for('b').breaker.failure()
    expect(servers.state).to.equal('open')
    expect(servers.openings).to.equal(1)
    // A server not called for max(10 s, twice the cool-down) is left out of the state: say a failed-over master.
    // The guarded call stamps calledAt (see guarded-call.test.ts); a guard starts as called when it is made.
    now = 10_000
    servers.for('a').calledAt = now
    expect(servers.state).to.equal('open')
    now = 10_001
    servers.for('a').calledAt = now
    expect(servers.state).to.equal('closed')
    const guardB = servers.for('b')
    guardB.calledAt = now
    const b = guardB.breaker
    expect(b.tryAcquire()).to.equal(true)
    expect(servers.state).to.equal('half-open')
    b.success()
    expect(servers.state).to.equal('closed')
    expect(heard).to.deep.equal(['open', 'close'])
  })

  it('probeNow lets every open breaker probe at its next call', () => {
    let now = 0
    const servers = createServerSet(
      { breaker: { failureThreshold: 1, cooldownMs: 60_000 } },
      (key) => key,
      () => now,
    )
    const { breaker } = servers.for('a')
    breaker.failure()
    now = 1
    expect(breaker.tryAcquire()).to.equal(false)
    servers.probeNow()
    expect(breaker.tryAcquire()).to.equal(true)
  })

  it('rejects a bad maxInFlight or breaker option at construction', () => {
    expect(optionErrorOf(() => createServerSet({ maxInFlight: 0 })).option).to.equal('redisStore.maxInFlight')
    expect(optionErrorOf(() => createServerSet({ breaker: { cooldownMs: 0 } })).option).to.equal('breaker.cooldownMs')
  })

  it('guardStore keeps a store’s guards beside it; any other store has none', () => {
    const servers = createServerSet()
    const store = {}
    expect(guardStore(store, servers)).to.equal(store)
    expect(serversOf(store)).to.equal(servers)
    expect(serversOf({})).to.equal(undefined)
  })
})
