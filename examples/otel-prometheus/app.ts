import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRateLimiter, type Store } from '@fleetlimit/core'
import { ipTenant } from '@fleetlimit/core/http'
import { instrumentLimiter } from '@fleetlimit/core/otel'
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus'
import { MeterProvider } from '@opentelemetry/sdk-metrics'
import { searchPolicy } from '../shared/policies.js'

export interface Example {
  /** The app's port and the metrics' port, as bound. */
  readonly appPort: number
  readonly metricsPort: number
  close(): Promise<void>
}

/**
 * A plain node:http app whose every request is limited by the search policy (5 per 10 s per client), and the
 * limiter's metrics in the Prometheus format at /metrics on a port of their own.
 */
export async function startExample(store: Store, ports: { app: number; metrics: number }): Promise<Example> {
  const exporter = new PrometheusExporter({ port: ports.metrics, preventServerStart: true })
  await exporter.startServer()
  const meterProvider = new MeterProvider({ readers: [exporter] })

  const limiter = createRateLimiter({ store, ...searchPolicy })
  // Without `meter`, instrumentLimiter uses the global MeterProvider (metrics.setGlobalMeterProvider).
  const detach = instrumentLimiter(limiter, { meter: meterProvider.getMeter('@fleetlimit/core') })

  const app: Server = createServer(async (req, res) => {
    try {
      const decision = await limiter.consume(ipTenant(req.socket.remoteAddress))
      if (decision.allowed) res.writeHead(200).end('ok\n')
      else {
        const retryAfter = String(Math.ceil(decision.retryAfterMs / 1_000))
        res.writeHead(429, { 'retry-after': retryAfter }).end('too many requests\n')
      }
    } catch {
      res.writeHead(503).end('the rate limiter is unavailable\n')
    }
  })
  app.listen(ports.app, '127.0.0.1')
  await new Promise((resolve) => app.once('listening', resolve))

  return {
    appPort: (app.address() as AddressInfo).port,
    metricsPort: ports.metrics,
    async close() {
      detach()
      await new Promise((resolve) => app.close(resolve))
      await meterProvider.shutdown()
    },
  }
}
