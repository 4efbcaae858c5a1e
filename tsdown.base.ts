import { defineConfig } from 'tsdown'

/**
 * The one build of every package: ESM and CJS with .d.mts/.d.cts types, for Node 20. Each package's `build`
 * script calls tsdown's `build()` rather than its CLI, whose start-up notice on Node 20 ("Node.js v20 is
 * deprecated") is all 0.21.x prints there; 0.22 and newer need Node 22 to build.
 */
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  fixedExtension: true,
  platform: 'node',
  target: 'node20',
  clean: true,
  // As the CLI does by default: a warning fails the build.
  failOnWarn: true,
  // Rolldown's note that a plugin took most of the time: on two cores the types always do.
  inputOptions: { checks: { pluginTimings: false } },
})
