import { readFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  createRateLimiter,
  definePolicy,
  isFleetlimitError,
  memoryStore,
  redisStore,
  type Store,
} from '@fleetlimit/core'
import { instrumentLimiter } from '@fleetlimit/core/otel'
import { DataPointType, type Histogram, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { expect } from 'chai'
import sinon from 'sinon'
import { createServerSet, guardStore } from '../../packages/core/src/store/server-set.js'
import { serverPerTest } from '../support/faults.js'

/** A reader that exports only when the test collects. */
class TestReader extends MetricReader {
  protected override async onShutdown() {}
  protected override async onForceFlush() {}
}

/** Each metric's points by their attribute values, joined: a counter's or gauge's value, a histogram's count. */
async function collect(reader: MetricReader) {
  const { resourceMetrics, errors } = await reader.collect()
  expect(errors).to.deep.equal([])
  const metrics: Record<string, Record<string, number>> = {}
  for (const { metrics: list } of resourceMetrics.scopeMetrics) {
    for (const metric of list) {
      const points: Record<string, number> = {}
      metrics[metric.descriptor.name] = points
      for (const point of metric.dataPoints) {
        const key = Object.values(point.attributes).join(' ')
        points[key] =
          metric.dataPointType === DataPointType.HISTOGRAM ? (point.value as Histogram).count : (point.value as number)
      }
    }
  }
  return metrics
}

function metered() {
  const reader = new TestReader()
  const meter = new MeterProvider({ readers: [reader] }).getMeter('test')
  return { reader, meter }
}

const silent = { warn() {} }

describe('OpenTelemetry metrics (@fleetlimit/core/otel)', () => {
  describe('on a redis-server the test starts, and stops', function () {
    this.timeout(30_000)
    const redis = serverPerTest()

    it('counts a scripted sequence exactly: store and deny-cache decisions, an error, a timeout, then an outage', async () => {
      const { reader, meter } = metered()
      const breaker = { failureThreshold: 3, cooldownMs: 60_000 }
      const api = createRateLimiter({
        store: redisStore(redis.client, { breaker }),
        name: 'api',
        limit: 3,
        window: '1m',
        timeoutMs: 300,
        onStoreError: 'fail-open',
        fallback: { limit: 1 },
        logger: silent,
      })
      const search = createRateLimiter({
        store: redisStore(redis.client, { breaker }),
        name: 'search',
        limit: 10,
        window: '1m',
        timeoutMs: 300,
        onStoreError: 'fail-open',
        local: false,
        logger: silent,
      })
      instrumentLimiter(api, { meter })
      instrumentLimiter(search, { meter })
      const sources = async (limiter: typeof api, tenant: string, times: number) => {
        const made: string[] = []
        for (let i = 0; i < times; i++) {
          const decision = await limiter.consume(tenant)
          made.push(`${decision.allowed ? 'allowed' : 'denied'} ${decision.source}`)
        }
        return made
      }

      // Limit 3: three admitted, the fourth denied by the store, the fifth by the deny cache.
      expect(await sources(api, 'tenant-a', 5)).to.deep.equal([
        'allowed store',
        'allowed store',
        'allowed store',
        'denied store',
        'denied local',
      ])
      expect(await sources(search, 'tenant-a', 2)).to.deep.equal(['allowed store', 'allowed store'])

      // An error reply (a key of the wrong type), then a missed deadline (a frozen server): each sent, each failed.
      await redis.client.hset('fleetlimit:api~sl3-60000:{tenant-b}', 'not', 'a log')
      expect(await sources(api, 'tenant-b', 1)).to.deep.equal(['allowed fallback'])
      redis.server.freeze()
      expect(await sources(api, 'tenant-c', 1)).to.deep.equal(['allowed fallback'])
      redis.server.thaw()

      // The outage: once the client knows, nothing is sent; the third consecutive failure opens api's breaker.
      // Not events.once: it would reject on the 'error' (ECONNRESET) that comes first.
      const closed = new Promise((resolve) => redis.client.once('close', resolve))
      await redis.server.stop()
      await closed
      expect(await sources(api, 'tenant-c', 2)).to.deep.equal(['denied fallback', 'denied fallback'])
      expect(await sources(search, 'tenant-a', 1)).to.deep.equal(['allowed open'])

      const metrics = await collect(reader)
      expect(metrics['fleetlimit.decisions']).to.deep.equal({
        'api allowed store': 3,
        'api denied store': 1,
        'api denied local': 1,
        'search allowed store': 2,
        'api allowed fallback': 2,
        'api denied fallback': 2,
        'search allowed open': 1,
      })
      expect(metrics['fleetlimit.local.hits']).to.deep.equal({ api: 1 })
      expect(metrics['fleetlimit.store.calls']).to.deep.equal({ api: 6, search: 2 })
      expect(metrics['fleetlimit.store.errors']).to.deep.equal({
        'api error': 1,
        'api timeout': 1,
        'api short_circuit': 2,
        'search short_circuit': 1,
      })
      expect(metrics['fleetlimit.store.duration']).to.deep.equal({
        'api ok': 4,
        'search ok': 2,
        'api error': 1,
        'api timeout': 1,
      })
      expect(metrics['fleetlimit.breaker.state']).to.deep.equal({ api: 2, search: 0 })

      // The same numbers as the limiters' own counters.
      const [a, s] = [api.stats(), search.stats()]
      const total = (counts: Record<string, number> | undefined) => Object.values(counts ?? {}).reduce((x, y) => x + y)
      expect(total(metrics['fleetlimit.decisions'])).to.equal(a.decisions + s.decisions)
      expect(total(metrics['fleetlimit.store.calls'])).to.equal(a.storeCalls + s.storeCalls)
      expect(total(metrics['fleetlimit.store.errors'])).to.equal(
        a.storeErrors + a.shortCircuits + s.storeErrors + s.shortCircuits,
      )
      const values = Object.values(metrics).flatMap((points) => Object.keys(points).join(' ').split(' '))
      expect(
        values.filter((value) => value.startsWith('tenant')),
        'no tenant in any attribute',
      ).to.deep.equal([])
    })
  })

  it('records store durations in seconds, in buckets from 0.1 ms to 1 s', async () => {
    const { reader, meter } = metered()
    instrumentLimiter(createRateLimiter({ limit: 5, window: '1s' }), { meter }) // no decision: no point
    // A store that answers in exactly 250 ms (fake timers): its duration is recorded as 0.25 s.
    const clock = sinon.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
    const inner = memoryStore()
    const slow: Store = {
      ...inner,
      consume: (requests) => new Promise((resolve) => setTimeout(() => resolve(inner.consume(requests)), 250)),
    }
    const limiter = createRateLimiter({ store: slow, limit: 5, window: '1s', timeoutMs: 1_000 })
    instrumentLimiter(limiter, { meter })
    const decided = limiter.consume('t')
    await clock.tickAsync(250)
    expect(await decided).to.include({ allowed: true, source: 'store' })
    clock.restore()
    const { resourceMetrics } = await reader.collect()
    const duration = resourceMetrics.scopeMetrics[0]?.metrics.find(
      (m) => m.descriptor.name === 'fleetlimit.store.duration',
    )
    expect(duration?.descriptor.unit).to.equal('s')
    const point = duration?.dataPoints[0]?.value as Histogram
    expect(point.buckets.boundaries[0]).to.equal(0.0001)
    expect(point.buckets.boundaries.at(-1)).to.equal(1)
    expect(point.count).to.equal(1)
    expect(point.sum).to.equal(0.25)
  })

  it('counts what a shadow policy would have denied as shadow_denied', async () => {
    const { reader, meter } = metered()
    const limiter = createRateLimiter({ name: 'trial', limit: 1, window: '1m', shadow: true })
    instrumentLimiter(limiter, { meter })
    for (let i = 0; i < 3; i++) await limiter.consume('t')
    const metrics = await collect(reader)
    expect(metrics['fleetlimit.decisions']).to.deep.equal({
      'trial allowed store': 1,
      'trial shadow_denied store': 1,
      'trial shadow_denied local': 1,
    })
  })

  it('names the binding policy of several, and stops counting once detached', async () => {
    const { reader, meter } = metered()
    const limiter = createRateLimiter({
      policies: [
        definePolicy({ name: 'global', limit: 10, window: '1m' }),
        definePolicy({ name: 'search', limit: 2, window: '1m' }),
      ],
      local: false,
    })
    const detach = instrumentLimiter(limiter, { meter })
    for (let i = 0; i < 3; i++) await limiter.consume('t')
    detach()
    for (let i = 0; i < 3; i++) await limiter.consume('t')
    const metrics = await collect(reader)
    expect(metrics['fleetlimit.decisions']).to.deep.equal({ 'search allowed store': 2, 'search denied store': 1 })
    // A store call covers every policy; it is named by the first.
    expect(metrics['fleetlimit.store.calls']).to.deep.equal({ global: 3 })
    expect(metrics['fleetlimit.breaker.state'] ?? {}, 'the memory store has no breaker').to.deep.equal({})
  })

  it('reports the breaker state: 0 closed, 2 open, 1 half-open; no longer observed once detached', async () => {
    const { reader, meter } = metered()
    let now = 0
    const servers = createServerSet({ breaker: { failureThreshold: 1, cooldownMs: 1_000 } }, undefined, () => now)
    const { breaker } = servers.for('')
    const limiter = createRateLimiter({
      store: guardStore({ ...memoryStore() }, servers),
      name: 'api',
      limit: 5,
      window: '1s',
    })
    const detach = instrumentLimiter(limiter, { meter })
    const state = async () => (await collect(reader))['fleetlimit.breaker.state']
    expect(await state()).to.deep.equal({ api: 0 })
    breaker.failure()
    expect(await state()).to.deep.equal({ api: 2 })
    now = 1_000
    breaker.tryAcquire()
    expect(await state()).to.deep.equal({ api: 1 })
    breaker.success()
    expect(await state()).to.deep.equal({ api: 0 })
    detach()
    breaker.failure()
    // The SDK keeps exporting a gauge's last value; what matters is that the limiter is no longer read.
    expect(await state()).to.deep.equal({ api: 0 })
  })

  it('rejects what is not a limiter, or an unknown option, with a coded error', () => {
    const limiter = createRateLimiter({ limit: 1, window: '1s' })
    for (const call of [
      () => instrumentLimiter({} as never),
      () => instrumentLimiter(limiter, { metre: {} } as never),
      () => instrumentLimiter(limiter, { meter: {} as never }),
    ]) {
      expect(call)
        .to.throw()
        .that.satisfies((e: unknown) => isFleetlimitError(e, 'ERR_FLEETLIMIT_OPTION'))
    }
  })

  it('keeps @opentelemetry/api out of the main entries: no module they load imports it', async () => {
    const src = join(dirname(fileURLToPath(import.meta.url)), '../../packages/core/src')
    const seen = new Set<string>()
    const imports: string[] = []
    const visit = async (file: string) => {
      if (seen.has(file)) return
      seen.add(file)
      const text = await readFile(file, 'utf8')
      for (const [, from] of text.matchAll(/^(?:import|export)[^'"]*from '([^']+)'/gm)) {
        if (from?.startsWith('.')) await visit(join(dirname(file), from.replace(/\.js$/, '.ts')))
        else if (from) imports.push(from)
      }
    }
    await visit(join(src, 'index.ts'))
    await visit(join(src, 'http.ts'))
    expect(seen.size).to.be.above(10)
    expect(seen.has(join(src, 'otel.ts'))).to.equal(false)
    expect(imports.filter((from) => from.startsWith('@opentelemetry'))).to.deep.equal([])
  })
})
