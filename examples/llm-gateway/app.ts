import { type ChildProcess, fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { memoryStore } from '@fleetlimit/core'
import { startRedisServer } from '@fleetlimit/test-kit/redis-server'
import { createGateway, type Done, type GatewayConfig, type Learned } from './gateway.js'
import { startUpstream, type Upstream, type UpstreamStats } from './upstream.js'
import type { WorkerConfig, WorkerMessage } from './worker.js'

export interface LlmGatewayOptions {
  /**
   * Where the workers share their windows: 'redis' (the default), each worker a process of its own; or 'memory',
   * the workers side by side in this process on one memory store (which keeps its windows in one process).
   */
  readonly store?: 'redis' | 'memory'
  /** The Redis the workers share. Default: a redis-server started for the run, and stopped after it. */
  readonly redisUrl?: string
  /** Worker processes. Default 4. */
  readonly workers?: number
  /** Calls each worker keeps going at once. Default 3: twelve callers, more than the five in flight allowed. */
  readonly callsPerWorker?: number
  /**
   * The upstream's window, in ms: the limits stay 60 requests and 6,000 units per window, so a shorter window
   * scales time alone (6,000 ms runs the minute's traffic ten times faster). Default 60,000.
   */
  readonly windowMs?: number
  /** How many windows the run is measured over. Default 2. */
  readonly windows?: number
  /**
   * After how many windows the upstream lowers its quotas to 30 requests and 3,000 units per window (stated in
   * its headers, which the fleet learns from); 0 for never. Default 1.
   */
  readonly dropAfter?: number
  /**
   * How much longer the fleet's windows are than the upstream's, in ms: the time from an admission to the
   * upstream's count of the call (a Redis reply, a busy event loop, the request on the wire). Default 500.
   */
  readonly marginMs?: number
  /** Where the report's lines go. Default: console.log. */
  readonly log?: (line: string) => void
}

export interface LlmGatewayReport {
  /** The upstream's limits (and the fleet's, over windows `marginMs` longer). */
  readonly limits: {
    readonly requestsPerWindow: number
    readonly unitsPerWindow: number
    readonly inFlight: number
    readonly windowMs: number
  }
  /** What the upstream saw over the whole run (every call, to the stop): its maxima are the proof. */
  readonly upstream: UpstreamStats
  /** What each worker's limiter learned of the upstream's quotas, in the order heard. */
  readonly learned: readonly Learned[]
  /** Calls served and their units, counted at their arrival within the measured run (`windows` windows). */
  readonly measured: { readonly ms: number; readonly served: number; readonly units: number }
  /** The most units any fleet could have had served in the measured run: the units limit of each window. */
  readonly idealUnits: number
  /** measured.units / idealUnits. */
  readonly throughput: number
  /** The workers' own counts. */
  readonly workers: readonly Done[]
  /** Whether every expectation held. */
  readonly passed: boolean
}

// The upstream's limits: those of a small LLM API plan. A call's true cost is 10 to 200 units (mean 105), told
// only in its answer.
const REQUESTS_PER_WINDOW = 60
const UNITS_PER_WINDOW = 6_000
const IN_FLIGHT = 5
const MAX_COST = 200
// The quotas the upstream drops to mid-run, as a provider moving the account to a lower tier.
const DROPPED = { requestsPerWindow: 30, unitsPerWindow: 3_000 }
/** The 429s a drop may cost: calls in flight or admitted before the first answer that states the new quotas. */
const MAX_429S_AFTER_DROP = 20

/**
 * Four processes (by default) call a stub LLM upstream that enforces 60 requests and 6,000 units per window and
 * 5 calls in flight, sharing one fleetlimit limiter with those three policies through Redis. Each call is admitted
 * with its largest cost, settled down to the usage in its answer, and its in-flight slot is freed once the answer
 * has been read. The upstream states its quotas in OpenAI's headers and, after `dropAfter` windows, halves them:
 * the fleet learns the new quotas from the first answers that state them, and the upstream refuses only the few
 * calls sent before. With `dropAfter: 0` it never refuses a call, and serves nearly its units limit.
 *
 * @example
 * ```ts
 * const report = await runExample({ redisUrl: 'redis://127.0.0.1:6379', windowMs: 6_000, dropAfter: 0 })
 * console.log(report.upstream.rejected, report.throughput) // 0 0.95
 * ```
 */
export async function runExample(options: LlmGatewayOptions = {}): Promise<LlmGatewayReport> {
  const log = options.log ?? console.log
  const workerCount = options.workers ?? 4
  const windowMs = options.windowMs ?? 60_000
  const windows = options.windows ?? 2
  const marginMs = options.marginMs ?? 500
  const dropAfter = options.dropAfter ?? 1
  const onRedis = options.store !== 'memory'
  const { redisUrl, server } =
    !onRedis || options.redisUrl !== undefined
      ? { redisUrl: options.redisUrl, server: undefined }
      : await startRedisServer().then((started) => ({ redisUrl: started.url, server: started }))
  let upstream: Upstream | undefined
  let fleet: Fleet | undefined
  try {
    const api = await startUpstream({
      requestsPerWindow: REQUESTS_PER_WINDOW,
      unitsPerWindow: UNITS_PER_WINDOW,
      inFlight: IN_FLIGHT,
      windowMs,
      headers: true,
    })
    upstream = api
    const window = `${windowMs / 1_000} s`
    log(
      `${workerCount} workers call an LLM upstream that allows ${REQUESTS_PER_WINDOW} requests and ` +
        `${UNITS_PER_WINDOW} units per ${window} and ${IN_FLIGHT} calls in flight; they share one fleetlimit ` +
        `limiter with those three policies (windows ${marginMs} ms longer) ` +
        (onRedis ? `through Redis at ${redisUrl}; ` : 'on one memory store, in this process; ') +
        'the upstream states its quotas in x-ratelimit-* headers' +
        (dropAfter > 0 && dropAfter < windows
          ? `, and lowers them to ${DROPPED.requestsPerWindow} requests and ${DROPPED.unitsPerWindow} units ` +
            `after ${dropAfter} window${dropAfter > 1 ? 's' : ''}`
          : ''),
    )
    const base = {
      upstreamUrl: api.url,
      calls: options.callsPerWorker ?? 3,
      requestsPerWindow: REQUESTS_PER_WINDOW,
      unitsPerWindow: UNITS_PER_WINDOW,
      inFlight: IN_FLIGHT,
      windowMs: windowMs + marginMs,
      estimate: MAX_COST,
    }
    const done: Done[] = []
    const learned: Learned[] = []
    const tell = (message: Learned) => {
      learned.push(message)
      const what = message.limit === null ? 'back to its configured limit' : `${message.limit} per window`
      log(`  worker ${message.worker} learned from the upstream's headers: ${message.policy} ${what}`)
    }
    const configs = Array.from({ length: workerCount }, (_, i) => ({ ...base, worker: i + 1 }))
    fleet = onRedis
      ? await processFleet(configs, redisUrl as string, tell, (d) => done.push(d))
      : await inProcessFleet(configs, tell, (d) => done.push(d))
    const started = performance.now()
    fleet.go()
    for (let w = 1; w <= windows; w++) {
      await sleep(started + w * windowMs - performance.now())
      const { served, units, rejected } = api.stats()
      log(`  after ${w} window${w > 1 ? 's' : ''}: ${served} calls served, ${units} units, ${rejected} 429s`)
      if (w === dropAfter && w < windows) {
        api.setLimits(DROPPED)
        log(
          `  the upstream lowers its quotas to ${DROPPED.requestsPerWindow} requests and ` +
            `${DROPPED.unitsPerWindow} units per ${windowMs / 1_000} s`,
        )
      }
    }
    const measuredMs = performance.now() - started
    const { served, units } = api.stats()
    const clean = await fleet.stop()
    const stats = api.stats()

    const dropped = dropAfter > 0 && dropAfter < windows
    // Each window's units limit: the most any fleet could have had served.
    const idealUnits = dropped
      ? UNITS_PER_WINDOW * dropAfter + DROPPED.unitsPerWindow * (windows - dropAfter)
      : UNITS_PER_WINDOW * windows
    const throughput = units / idealUnits
    const errors = done.reduce((sum, d) => sum + d.errors, 0)
    const overLimit = done.reduce((sum, d) => sum + d.overLimit, 0)
    const classes = (['interactive', 'batch'] as const).map((name) => {
      const latencies = done.flatMap((d) => d.classes[name].latenciesMs).sort((a, b) => a - b)
      const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0
      return { name, served: latencies.length, median: at(0.5), p90: at(0.9), max: at(1) }
    })
    log(
      `  by priority class: ${classes
        .map(
          (c) =>
            `${c.name} ${c.served} calls, from call to answer median ${Math.round(c.median)} ms, ` +
            `p90 ${Math.round(c.p90)} ms, max ${Math.round(c.max)} ms`,
        )
        .join('; ')}`,
    )
    log('')
    let passed = true
    const check = (ok: boolean, text: string) => {
      passed &&= ok
      log(`  ${ok ? 'ok  ' : 'FAIL'} ${text}`)
    }
    check(
      stats.maxInFlight <= IN_FLIGHT,
      `in flight at the upstream: at most ${stats.maxInFlight} (limit ${IN_FLIGHT})`,
    )
    check(
      stats.maxRequestsInWindow <= REQUESTS_PER_WINDOW,
      `requests in any ${window}: at most ${stats.maxRequestsInWindow} (limit ${REQUESTS_PER_WINDOW})`,
    )
    check(
      stats.maxUnitsInWindow <= UNITS_PER_WINDOW,
      `units in any ${window}: at most ${stats.maxUnitsInWindow} (limit ${UNITS_PER_WINDOW})`,
    )
    if (dropped) {
      // Every worker holds both policies to the lowered quotas, learned from the answers of any of them.
      const holds = (worker: number, policy: string, limit: number) =>
        learned.some((l) => l.worker === worker && l.policy === policy && l.limit === limit)
      const workersLearned = Array.from({ length: workerCount }, (_, i) => i + 1).filter(
        (w) => holds(w, 'requests', DROPPED.requestsPerWindow) && holds(w, 'units', DROPPED.unitsPerWindow),
      ).length
      check(
        workersLearned === workerCount,
        `workers that learned the lowered quotas (requests ${DROPPED.requestsPerWindow}, units ` +
          `${DROPPED.unitsPerWindow}): ${workersLearned} of ${workerCount}`,
      )
      // Only the calls sent between the drop and the first answer that stated it can be refused.
      check(
        stats.rejected <= MAX_429S_AFTER_DROP,
        `429s from the upstream: ${stats.rejected}, all after its quotas dropped (at most ${MAX_429S_AFTER_DROP} expected)`,
      )
    } else check(stats.rejected === 0, `429s from the upstream: ${stats.rejected}`)
    // Units bind: 60 requests at the mean cost of 105 would be 6,300 units, over the 6,000 allowed.
    // A drop costs the fleet the wait for its windows to drain below the new quotas, as it costs the upstream's.
    const least = dropped ? 0.8 : 0.9
    check(
      throughput >= least,
      `units served in ${windows} windows: ${units} of the ${idealUnits} the units limits allow ` +
        `(${(throughput * 100).toFixed(1)}%, expected at least ${least * 100}%)`,
    )
    check(
      errors === 0 && overLimit === 0 && clean === workerCount && done.length === workerCount,
      `workers: ${clean} of ${workerCount} reported and exited cleanly; failed calls or settles: ${errors}; ` +
        `settles over a limit: ${overLimit}`,
    )
    return {
      limits: {
        requestsPerWindow: REQUESTS_PER_WINDOW,
        unitsPerWindow: UNITS_PER_WINDOW,
        inFlight: IN_FLIGHT,
        windowMs,
      },
      upstream: stats,
      learned,
      measured: { ms: measuredMs, served, units },
      idealUnits,
      throughput,
      workers: done,
      passed,
    }
  } finally {
    fleet?.kill()
    await upstream?.close()
    await server?.stop()
  }
}

/** The workers of a run, ready to call: `go` starts them; `stop` stops them and resolves with those that ended cleanly. */
interface Fleet {
  go(): void
  stop(): Promise<number>
  /** Ends whatever is left of them, after a failure. */
  kill(): void
}

/** Each worker a process of its own (worker.ts), sharing the windows through Redis under one prefix. */
async function processFleet(
  configs: readonly GatewayConfig[],
  redisUrl: string,
  tell: (learned: Learned) => void,
  report: (done: Done) => void,
): Promise<Fleet> {
  const workerPath = fileURLToPath(new URL('./worker.ts', import.meta.url))
  const prefix = `fleetlimit-llm-${randomBytes(4).toString('hex')}`
  const workers: ChildProcess[] = []
  const kill = () => {
    for (const child of workers) if (child.exitCode === null && child.signalCode === null) child.kill()
  }
  const ready = configs.map((config) => {
    const child = fork(workerPath, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    workers.push(child)
    child.send({ ...config, redisUrl, prefix } satisfies WorkerConfig)
    return new Promise<void>((resolve, reject) => {
      child.on('message', (message: WorkerMessage) => {
        if (message.type === 'ready') resolve()
        else if (message.type === 'learned') tell(message)
        else report(message)
      })
      child.once('exit', (code) => reject(new Error(`worker ${config.worker} exited with ${code} before it was ready`)))
    })
  })
  try {
    await Promise.all(ready)
  } catch (error) {
    kill()
    throw error
  }
  for (const child of workers) child.removeAllListeners('exit')
  const exited = workers.map((child) => once(child, 'exit'))
  return {
    go: () => {
      for (const child of workers) child.send('go')
    },
    async stop() {
      for (const child of workers) child.send('stop')
      const exits = await Promise.all(exited)
      return exits.filter(([code]) => code === 0).length
    },
    kill,
  }
}

/** The workers side by side in this process, each its own limiter on one memory store. */
async function inProcessFleet(
  configs: readonly GatewayConfig[],
  tell: (learned: Learned) => void,
  report: (done: Done) => void,
): Promise<Fleet> {
  const store = memoryStore()
  const gateways = configs.map((config) => createGateway(config, store, tell))
  await Promise.all(gateways.map((gateway) => gateway.connect()))
  const stopping = new AbortController()
  let runs: Promise<boolean>[] = []
  return {
    go() {
      runs = gateways.map((gateway) =>
        gateway.run(stopping.signal).then(
          (done) => {
            report(done)
            return true
          },
          (error: unknown) => {
            console.error(error)
            return false
          },
        ),
      )
    },
    async stop() {
      stopping.abort(new Error('stopped'))
      return (await Promise.all(runs)).filter(Boolean).length
    },
    kill: () => stopping.abort(new Error('stopped')),
  }
}
