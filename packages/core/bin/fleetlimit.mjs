#!/usr/bin/env node
// The workspace's `fleetlimit` (`pnpm exec fleetlimit …`): runs src/cli.ts through tsx, so it needs no build and
// exists before one, for pnpm to link. The published bin is the built dist/cli.mjs (publishConfig.bin).
import { register } from 'tsx/esm/api'

register()
await import('../src/cli.ts')
