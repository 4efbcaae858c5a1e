// `pnpm example:llm-gateway`: four worker processes share an LLM upstream's three limits through Redis
// (REDIS_URL, or a redis-server started for the run). WINDOW_MS scales time: 6000 runs it ten times faster.
import { runExample } from './app.js'

const windowMs = process.env.WINDOW_MS === undefined ? undefined : Number(process.env.WINDOW_MS)
const report = await runExample({
  ...(process.env.REDIS_URL && { redisUrl: process.env.REDIS_URL }),
  ...(windowMs !== undefined && { windowMs }),
})
process.exitCode = report.passed ? 0 : 1
