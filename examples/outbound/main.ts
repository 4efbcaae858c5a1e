// `pnpm example:outbound`: four worker processes share one upstream's quota through Redis (REDIS_URL, or a
// redis-server started for the run), and the upstream's one 429 pauses them all.
import { runExample } from './app.js'

const report = await runExample(process.env.REDIS_URL ? { redisUrl: process.env.REDIS_URL } : {})
process.exitCode = report.passed ? 0 : 1
