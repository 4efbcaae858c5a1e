import { storeFromEnv } from '../shared/policies.js'
import { startExample } from './app.js'

const { store, label } = storeFromEnv()
const { appPort, metricsPort } = await startExample(store, {
  app: Number(process.env.PORT ?? 3000),
  metrics: Number(process.env.METRICS_PORT ?? 9464),
})
console.log(`otel-prometheus on http://127.0.0.1:${appPort} (limits in ${label}); metrics on :${metricsPort}/metrics`)
console.log(
  `try: for i in 1 2 3 4 5 6; do curl -s localhost:${appPort}; done; curl -s localhost:${metricsPort}/metrics`,
)
