import { port, storeFromEnv } from '../shared/policies.js'
import { createApp } from './app.js'

const { store, label } = storeFromEnv()
const app = await createApp(store)
await app.listen({ port: port(), host: '127.0.0.1' })
console.log(
  `fastify-plugin on http://127.0.0.1:${port()} (limits in ${label}); try: curl -i localhost:${port()}/search`,
)
