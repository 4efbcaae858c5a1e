import { defineConfig } from 'tsdown'
import base from '../../tsdown.base.ts'

// Four entries: the user API, the adapter authors' contract (`/http`), the store authors' contract (`/store`), and
// `/otel`, apart so that the main one never loads @opentelemetry/api. The `fleetlimit` command line is a bin: ESM
// only, no types.
export default defineConfig([
  { ...base, entry: ['src/index.ts', 'src/http.ts', 'src/otel.ts', 'src/store.ts'] },
  { ...base, entry: ['src/cli.ts'], format: ['esm'], dts: false, clean: false },
])
