import { memoryStore, redisStore } from '@fleetlimit/core'
import { freePort, startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { expect } from 'chai'
import { Redis } from 'ioredis'
import request from 'supertest'
import { httpBurst } from '../examples/demo/http-burst.js'
import { createApp as expressApp } from '../examples/express-basic/app.js'
import { createApp as fastifyApp } from '../examples/fastify-plugin/app.js'
import { createApp as koaApp } from '../examples/koa-router/app.js'
import { runExample as llmGatewayExample } from '../examples/llm-gateway/app.js'
import { startExample as otelExample } from '../examples/otel-prometheus/app.js'
import { runExample as outboundExample } from '../examples/outbound/app.js'
import { redisClient, uniquePrefix } from './support/redis.js'
import { redisUrl } from './support/root-hooks.js'

/** The client's next event of this name; events.once would reject on an 'error' first (a refused reconnect). */
const next = (emitter: { once(event: string, listener: () => void): unknown }, event: string) =>
  new Promise<void>((resolve) => emitter.once(event, resolve))

describe('the examples', () => {
  it('the demo’s HTTP part: five searches admitted, then 429s, with headers', async () => {
    const exchanges = await httpBurst(7)
    expect(exchanges.map((e) => e.status)).to.deep.equal([200, 200, 200, 200, 200, 429, 429])
    expect(exchanges[5]?.headers['retry-after']).to.equal('10')
    expect(exchanges[0]?.headers['ratelimit-policy']).to.equal('"global";q=100;w=60, "search";q=5;w=10')
  })

  it('the demo’s HTTP part on Redis: the same answers, counted in Redis under the store’s prefix', async () => {
    const client = redisClient()
    const prefix = uniquePrefix()
    try {
      const exchanges = await httpBurst(7, redisStore(client, { prefix }))
      expect(exchanges.map((e) => e.status)).to.deep.equal([200, 200, 200, 200, 200, 429, 429])
      expect(exchanges[5]?.headers['retry-after']).to.equal('10')
      expect(exchanges[0]?.headers['ratelimit-policy']).to.equal('"global";q=100;w=60, "search";q=5;w=10')
      expect((await client.keys(`${prefix}:*`)).sort()).to.deep.equal([
        `${prefix}:global~sl3-60000:{127.0.0.1}`,
        `${prefix}:search~sl3-10000:{127.0.0.1}:GET%20/search`,
      ])
    } finally {
      client.disconnect()
    }
  })

  it('all three answer the sixth search with the same 429, and keep the global quota for /users', async () => {
    const express = expressApp(memoryStore())
    const koa = koaApp(memoryStore()).callback()
    const fastify = await fastifyApp(memoryStore())
    await fastify.ready()
    const denials: unknown[] = []
    for (const server of [express, koa, fastify.server]) {
      for (let i = 0; i < 5; i++) expect((await request(server).get('/search')).status).to.equal(200)
      const denied = await request(server).get('/search')
      expect(denied.status).to.equal(429)
      denials.push([denied.headers.ratelimit, denied.headers['retry-after'], denied.text])
      const user = await request(server).get('/users/7')
      expect(user.status).to.equal(200)
      expect(user.headers.ratelimit, 'the denied search was not counted globally').to.equal('"global";r=94;t=60')
    }
    expect(denials[1]).to.deep.equal(denials[0])
    expect(denials[2]).to.deep.equal(denials[0])
    await fastify.close()
  })

  it('express-basic’s /healthz: 503 while Redis is down, 200 once its client is ready again', async () => {
    let server = await startRedisServer()
    const client = new Redis(server.url)
    client.on('error', () => {})
    try {
      await next(client, 'ready')
      const app = expressApp(redisStore(client))
      expect((await request(app).get('/healthz')).status).to.equal(200)
      const closed = next(client, 'close')
      await server.stop()
      await closed
      const down = await request(app).get('/healthz')
      expect([down.status, down.body]).to.deep.equal([503, { store: 'unavailable' }])
      // Requests during the outage open the global policy's breaker: the probe still finds Redis on its return.
      for (let i = 0; i < 6; i++) expect((await request(app).get('/users/1')).status).to.equal(503)
      const back = next(client, 'ready')
      server = await startRedisServer([], { port: server.port })
      await back
      const up = await request(app).get('/healthz')
      expect([up.status, up.body]).to.deep.equal([200, { store: 'ready' }])
    } finally {
      client.disconnect()
      await server.stop()
    }
  })

  it('otel-prometheus: the limiter’s decisions and store calls, scraped in the Prometheus format', async () => {
    const example = await otelExample(memoryStore(), { app: 0, metrics: await freePort() })
    try {
      const statuses: number[] = []
      for (let i = 0; i < 7; i++) statuses.push((await fetch(`http://127.0.0.1:${example.appPort}/`)).status)
      expect(statuses).to.deep.equal([200, 200, 200, 200, 200, 429, 429])
      const scrape = await (await fetch(`http://127.0.0.1:${example.metricsPort}/metrics`)).text()
      const scope = 'otel_scope_name="@fleetlimit/core"'
      const lines = scrape.split('\n').filter((line) => /^fleetlimit_\w+(_total|_count)\{/.test(line))
      expect(lines).to.deep.equal([
        `fleetlimit_decisions_total{fleetlimit_policy="search",fleetlimit_outcome="allowed",fleetlimit_source="store",${scope}} 5`,
        `fleetlimit_decisions_total{fleetlimit_policy="search",fleetlimit_outcome="denied",fleetlimit_source="store",${scope}} 1`,
        `fleetlimit_decisions_total{fleetlimit_policy="search",fleetlimit_outcome="denied",fleetlimit_source="local",${scope}} 1`,
        `fleetlimit_store_calls_total{fleetlimit_policy="search",${scope}} 6`,
        `fleetlimit_local_hits_total{fleetlimit_policy="search",${scope}} 1`,
        `fleetlimit_store_duration_count{fleetlimit_policy="search",fleetlimit_store_outcome="ok",${scope}} 6`,
      ])
      expect(scrape).to.include(
        'fleetlimit_store_duration_bucket{fleetlimit_policy="search",fleetlimit_store_outcome="ok"',
      )
    } finally {
      await example.close()
    }
  })

  it('outbound: four workers keep to the upstream’s quota through Redis, and its 429 pauses them all', async function () {
    this.timeout(60_000)
    const lines: string[] = []
    const report = await outboundExample({ redisUrl: redisUrl(), phaseMs: 1_000, log: (line) => lines.push(line) })
    const [held, strict, after] = report.phases
    expect(held?.limited, 'no 429 while fleetlimit holds the quota').to.equal(0)
    expect(
      held?.sentByWorker.every((n) => n > 0),
      'every worker calls the upstream',
    ).to.equal(true)
    expect(strict?.limited, 'one 429 per worker in flight when the upstream turned strict').to.be.within(1, 4)
    expect(report.pauses.length).to.be.within(1, 4)
    expect(report.pauses.every((p) => p.ms === 2_000)).to.equal(true)
    expect(lines.filter((line) => /^ +\+[\d.]+ s +fleet-wide pause:/.test(line))).to.have.length(1)
    expect(after?.limited, 'no 429 after the pause').to.equal(0)
    expect(after?.ok).to.be.greaterThan(0)
    expect(report.errors).to.equal(0)
    expect(report.passed).to.equal(true)
  })

  // The upstream allows 60 requests and 6,000 units per window and 5 in flight; a call costs 10 to 200 units
  // (mean 105), told only in its answer. Units bind: 60 requests would cost 6,300 units on average. So the ideal
  // is the units limit, 6,000 per window: over two windows no fleet can have more than 12,000 units served.
  it('llm-gateway: four workers keep within the three limits through Redis, at 90% of the units limit', async function () {
    this.timeout(60_000)
    const lines: string[] = []
    const report = await llmGatewayExample({
      redisUrl: redisUrl(),
      windowMs: 6_000,
      dropAfter: 0,
      log: (line) => lines.push(line),
    })
    const { upstream } = report
    expect(upstream.maxInFlight, 'the in-flight policy binds: twelve callers, five in flight').to.equal(5)
    expect(upstream.maxRequestsInWindow).to.be.at.most(60)
    expect(upstream.maxUnitsInWindow).to.be.at.most(6_000)
    expect(upstream.rejected, 'no 429').to.equal(0)
    expect(report.idealUnits).to.equal(12_000)
    expect(report.throughput, lines.join('\n')).to.be.at.least(0.9)
    expect(report.workers.map((w) => [w.errors, w.overLimit, w.limited])).to.deep.equal([
      [0, 0, 0],
      [0, 0, 0],
      [0, 0, 0],
      [0, 0, 0],
    ])
    // Each worker's first loop calls as the interactive class, the other two as batch: both classes are served,
    // and every served call's time is recorded in its class.
    for (const worker of report.workers) {
      const { interactive, batch } = worker.classes
      expect([interactive.served > 0, batch.served > 0], `worker ${worker.worker}`).to.deep.equal([true, true])
      expect(interactive.served + batch.served).to.equal(worker.ok)
      expect([interactive.latenciesMs.length, batch.latenciesMs.length]).to.deep.equal([
        interactive.served,
        batch.served,
      ])
    }
    expect(report.passed).to.equal(true)
  })

  // After a window the upstream halves its quotas (30 requests, 3,000 units), stated in its x-ratelimit-* headers:
  // each worker learns both from the fleet's answers, and only calls sent before the first such answer are refused.
  for (const store of ['redis', 'memory'] as const) {
    it(`llm-gateway: the fleet learns the upstream’s lowered requests and tokens quotas from its headers (${store})`, async function () {
      this.timeout(60_000)
      const lines: string[] = []
      const report = await llmGatewayExample({
        store,
        ...(store === 'redis' && { redisUrl: redisUrl() }),
        windowMs: 6_000,
        log: (line) => lines.push(line),
      })
      const learned = (policy: string, limit: number) =>
        [...new Set(report.learned.filter((l) => l.policy === policy && l.limit === limit).map((l) => l.worker))].sort()
      expect(learned('requests', 30), lines.join('\n')).to.deep.equal([1, 2, 3, 4])
      expect(learned('units', 3_000)).to.deep.equal([1, 2, 3, 4])
      expect(report.upstream.maxInFlight).to.be.at.most(5)
      expect(report.upstream.maxRequestsInWindow).to.be.at.most(60)
      expect(report.upstream.maxUnitsInWindow).to.be.at.most(6_000)
      expect(report.upstream.rejected).to.be.at.most(20)
      expect(report.idealUnits).to.equal(9_000)
      expect(report.passed, lines.join('\n')).to.equal(true)
    })
  }
})
