#!/usr/bin/env node
// `fleetlimit`: the operator's command line (the bin of @fleetlimit/core). See docs/operations.md.
import { main } from './cli/main.js'

const code = await main(process.argv.slice(2), process.env, process.stdout, process.stderr)
// Exits now: a failed connection leaves ioredis timers that would hold the process for seconds. Writes to a
// terminal, a file or a pipe are synchronous on Linux and macOS, so nothing printed is lost.
process.exit(code)
