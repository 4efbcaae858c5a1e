// `pnpm example:llm-gateway`: four worker processes share an LLM upstream's three limits through Redis
// (REDIS_URL, or a redis-server started for the run). WINDOW_MS scales time: 6000 runs it ten times faster.
// DROP_AFTER: after how many windows the upstream lowers its quotas (default 1; 0 for never). STORE=memory runs the
// workers side by side in this process on one memory store instead.
import { runExample } from './app.js'

const windowMs = process.env.WINDOW_MS === undefined ? undefined : Number(process.env.WINDOW_MS)
const dropAfter = process.env.DROP_AFTER === undefined ? undefined : Number(process.env.DROP_AFTER)
const report = await runExample({
  ...(process.env.STORE === 'memory' && { store: 'memory' as const }),
  ...(process.env.REDIS_URL && { redisUrl: process.env.REDIS_URL }),
  ...(windowMs !== undefined && { windowMs }),
  ...(dropAfter !== undefined && { dropAfter }),
})
process.exitCode = report.passed ? 0 : 1
