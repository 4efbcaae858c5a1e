import { defineConfig } from 'tsdown'

/** The one build of every package: ESM and CJS with .d.mts/.d.cts types, for Node 20. */
export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm', 'cjs'],
  dts: true,
  fixedExtension: true,
  platform: 'node',
  target: 'node20',
  clean: true,
})
