import { defineConfig } from 'tsdown'
import base from '../../tsdown.base.ts'

// Core has a second entry, `@fleetlimit/core/otel`, so that the main one never loads @opentelemetry/api.
export default defineConfig({ ...base, entry: ['src/index.ts', 'src/otel.ts'] })
