import { port, storeFromEnv } from '../shared/policies.js'
import { createApp } from './app.js'

const { store, label } = storeFromEnv()
createApp(store).listen(port(), () => {
  console.log(
    `express-basic on http://127.0.0.1:${port()} (limits in ${label}); try: curl -i localhost:${port()}/search`,
  )
})
