// In-process part: decisions per second of fleetlimit's memory store beside the peers' memory stores
// (rate-limiter-flexible's RateLimiterMemory, express-rate-limit's MemoryStore), each called directly, with 1 and
// with 100 decisions in flight, on two loads: admitted (10,000 tenants in turn, none near its limit) and denied
// (one tenant past its limit). The three take turns within each round; each figure is the median of the rounds,
// so that a slice of a busy machine lost to one of them is not read as its speed.
import { createRateLimiter, memoryStore } from '@fleetlimit/core'
import type { StorePlan, WindowResult } from '@fleetlimit/core/store'
import { MemoryStore } from 'express-rate-limit'
import { RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible'
// Internal to core (not in its exports), so by path: the memory store's log, for the floor it sets.
import { Receipted } from '../packages/core/src/limiter/receipts.js'
import { SlidingLog } from '../packages/core/src/store/sliding-log.js'
import type { PartResult } from './run.js'

export interface InProcessOptions {
  /** Rounds measured (after one unmeasured round that warms every cell up). Default 7. */
  readonly rounds?: number
  /** Measured time per cell per round. Default 150 ms. */
  readonly sliceMs?: number
}

const IN_FLIGHT = [1, 100] as const
const TENANTS = 10_000
const WINDOW_MS = 3_600_000
// Far above what a tenant reaches in a run: every decision of the admitted load is admitted.
const HIGH_LIMIT = 1_000_000_000
const DENIED_LIMIT = 10

type Load = 'admitted' | 'denied'
/** One decision: resolves true when admitted. */
type Decide = () => Promise<boolean>

interface Subject {
  readonly limiter: string
  readonly call: string
  /** A new limiter with `limit` per hour, whose decisions take the key that `next()` names. */
  create(limit: number, next: () => string): Promise<Decide>
}

const SUBJECTS: readonly Subject[] = [
  {
    limiter: 'fleetlimit',
    call: 'createRateLimiter({ store: memoryStore() }).consume(key)',
    async create(limit, next) {
      const limiter = createRateLimiter({ store: memoryStore(), limit, window: WINDOW_MS })
      return async () => (await limiter.consume(next())).allowed
    },
  },
  {
    // One stage of our consume alone: what the limiter's plan, tier, receipt and counts add is the rest.
    limiter: 'fleetlimit: the store alone',
    call: 'memoryStore().decideNow(plan): the Store contract, a plan compiled once per tenant, no limiter',
    async create(limit, next) {
      const store = memoryStore()
      const plans = new Map<string, StorePlan>()
      const call = async (key: string) => {
        let plan = plans.get(key)
        if (plan === undefined) {
          plan = store.plan([{ key, limit, windowMs: WINDOW_MS, cost: 1 }])
          plans.set(key, plan)
        }
        return store.decideNow(plan)[0] as WindowResult
      }
      return async () => (await call(next())).allowed
    },
  },
  {
    limiter: 'rate-limiter-flexible',
    call: 'new RateLimiterMemory(…).consume(key)',
    async create(limit, next) {
      const limiter = new RateLimiterMemory({ points: limit, duration: WINDOW_MS / 1000 })
      return () =>
        limiter.consume(next()).then(
          () => true,
          (error: unknown) => {
            if (error instanceof RateLimiterRes) return false
            throw error
          },
        )
    },
  },
  {
    limiter: 'express-rate-limit',
    call: 'new MemoryStore().increment(key)',
    async create(limit, next) {
      const store = new MemoryStore()
      store.init({ windowMs: WINDOW_MS } as Parameters<MemoryStore['init']>[0])
      return async () => (await store.increment(next())).totalHits <= limit
    },
  },
]

/**
 * Floors, measured in the same rounds: the least an in-process decision can cost here. A counter per key (an
 * async function, a Map lookup, a fresh answer object), and the same with the memory store's exact sliding log
 * in place of the counter (what the log's own bookkeeping adds), and that log's answer made as a limiter's must be:
 * the decision's public fields and a receipt that lets its limiter refund it (what an answer of ours adds).
 * Each is called as the limiters are: a function that returns a promise of its answer, awaited by the same wrapper.
 */
const FLOORS: readonly Subject[] = [
  {
    limiter: 'floor: counter',
    call: 'an async function: a Map lookup, a counter, a fresh answer',
    async create(limit, next) {
      const counts = new Map<string, { n: number }>()
      const call = async (key: string) => {
        let entry = counts.get(key)
        if (entry === undefined) {
          entry = { n: 0 }
          counts.set(key, entry)
        }
        const allowed = entry.n < limit
        if (allowed) entry.n++
        return { allowed, remaining: limit - entry.n, retryAfterMs: 0, resetMs: WINDOW_MS }
      }
      return async () => (await call(next())).allowed
    },
  },
  {
    limiter: 'floor: sliding log',
    call: 'the same with the memory store’s SlidingLog in place of the counter',
    async create(limit, next) {
      const logs = new Map<string, SlidingLog>()
      const origin = performance.timeOrigin
      const call = async (key: string) => {
        let log = logs.get(key)
        if (log === undefined) {
          log = new SlidingLog()
          logs.set(key, log)
        }
        const now = origin + performance.now()
        const used = log.used(now, WINDOW_MS)
        const allowed = used + 1 <= limit
        if (allowed) log.add(now, 1)
        return log.result(now, limit, WINDOW_MS, 1, used, allowed)
      }
      return async () => (await call(next())).allowed
    },
  },
  {
    limiter: 'floor: refundable decision',
    call: 'the same, answered as fleetlimit answers: a decision of its fields, a receipt in private fields, counters',
    async create(limit, next) {
      const plans = new Map<string, { readonly id: string; readonly log: SlidingLog }>()
      const origin = performance.timeOrigin
      const owner = {}
      const counters = { decisions: 0, allowed: 0, denied: 0 }
      const call = async (key: string) => {
        let plan = plans.get(key)
        if (plan === undefined) {
          plan = { id: key, log: new SlidingLog() }
          plans.set(key, plan)
        }
        const { log } = plan
        const now = origin + performance.now()
        const used = log.used(now, WINDOW_MS)
        const allowed = used + 1 <= limit
        const recorded = allowed ? log.add(now, 1) : 0
        const result = log.result(now, limit, WINDOW_MS, 1, used, allowed)
        const decision = {
          allowed: result.allowed,
          limit,
          remaining: result.remaining,
          retryAfterMs: result.retryAfterMs,
          resetMs: result.resetMs,
          source: 'store' as const,
          policy: 'default',
        }
        counters.decisions++
        if (allowed) {
          counters.allowed++
          // What a refund of it needs: the plan, the units and the time they were recorded at.
          new Receipted(decision, { id: plan.id, units: 1, recorded }, owner)
        } else counters.denied++
        return decision
      }
      return async () => (await call(next())).allowed
    },
  },
]

const ALL = [...SUBJECTS, ...FLOORS]

const TENANT_KEYS = Array.from({ length: TENANTS }, (_, i) => `tenant-${i}`)

/** The keys of a load: the 10,000 tenants in turn, or the one tenant. */
function keysOf(load: Load): () => string {
  if (load === 'denied') return () => 'tenant-0'
  let i = 0
  return () => {
    const key = TENANT_KEYS[i] as string
    i = i + 1 === TENANTS ? 0 : i + 1
    return key
  }
}

/** A subject ready for a load: the denied load's tenant is filled to its limit first. */
async function prepare(subject: Subject, load: Load): Promise<Decide> {
  const decide = await subject.create(load === 'denied' ? DENIED_LIMIT : HIGH_LIMIT, keysOf(load))
  if (load === 'denied') {
    for (let i = 0; i < DENIED_LIMIT; i++) if (!(await decide())) throw new Error(`${subject.limiter} denied early`)
    if (await decide()) throw new Error(`${subject.limiter} admitted past its limit`)
  }
  return decide
}

/** Keeps `inFlight` decisions outstanding for `ms`: decisions per second, and whether each matched the load. */
async function drive(decide: Decide, inFlight: number, ms: number, load: Load) {
  let decisions = 0
  let unexpected = 0
  const expected = load === 'admitted'
  const started = performance.now()
  const end = started + ms
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < end) {
        if ((await decide()) !== expected) unexpected++
        decisions++
      }
    }),
  )
  return { perSecond: (decisions * 1000) / (performance.now() - started), unexpected }
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

export interface InProcessRow {
  readonly load: Load
  readonly inFlight: number
  readonly limiter: string
  /** Median over the rounds. */
  readonly perSecond: number
  readonly rounds: readonly number[]
}

export async function inProcess(options: InProcessOptions = {}): Promise<PartResult> {
  const rounds = options.rounds ?? 7
  const sliceMs = options.sliceMs ?? 150
  const cells = (['admitted', 'denied'] as const).flatMap((load) => IN_FLIGHT.map((inFlight) => ({ load, inFlight })))
  // One limiter per subject and cell, kept across rounds: each round measures it in its steady state.
  const decides = new Map<string, Decide>()
  const id = (load: Load, inFlight: number, limiter: string) => `${load}/${inFlight}/${limiter}`
  const subjects = ALL
  for (const { load, inFlight } of cells) {
    for (const subject of subjects) decides.set(id(load, inFlight, subject.limiter), await prepare(subject, load))
  }
  const figures = new Map<string, number[]>()
  for (let round = -1; round < rounds; round++) {
    for (const { load, inFlight } of cells) {
      // Taking turns, starting with a different subject each round.
      for (let s = 0; s < subjects.length; s++) {
        const subject = subjects[(s + round + 1) % subjects.length] as Subject
        const key = id(load, inFlight, subject.limiter)
        const { perSecond, unexpected } = await drive(decides.get(key) as Decide, inFlight, sliceMs, load)
        if (unexpected > 0) throw new Error(`${key}: ${unexpected} decisions not ${load}`)
        if (round >= 0) figures.set(key, [...(figures.get(key) ?? []), perSecond])
      }
    }
  }
  const rows: InProcessRow[] = cells.flatMap(({ load, inFlight }) =>
    subjects.map(({ limiter }) => {
      const measured = figures.get(id(load, inFlight, limiter)) ?? []
      return { load, inFlight, limiter, perSecond: Math.round(median(measured)), rounds: measured.map(Math.round) }
    }),
  )
  return { title: 'Decisions in process, beside the peers', markdown: report(rows, rounds, sliceMs), data: rows }
}

const formatRate = (n: number) =>
  n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : n >= 1e3 ? `${Math.round(n / 1e3)}k` : String(Math.round(n))

function report(rows: readonly InProcessRow[], rounds: number, sliceMs: number): string {
  const lines = [
    `Decisions per second in one Node process, each limiter's in-memory store called directly (no HTTP): the ` +
      `median of ${rounds} rounds of ${sliceMs} ms per cell, the limiters taking turns in each round. Admitted: ` +
      `${TENANTS.toLocaleString('en')} tenants in turn, none near its limit. Denied: one tenant past its limit ` +
      `(${DENIED_LIMIT} per hour).`,
    '',
    ...ALL.map((s) => `- ${s.limiter}: \`${s.call}\``),
    '',
    'The floors are no limiters: they show what the least work of a decision in this process costs on this ' +
      'machine, with a counter, with an exact sliding log, and with that log answering as fleetlimit must: a ' +
      'plain decision object of its public fields, refundable by the limiter that made it. Each is called as ' +
      'the limiters are: an async function of the key, whose answer the same wrapper awaits. The store alone is one ' +
      'stage of our `consume`, called through the published Store contract: the rest of `consume` ' +
      '(the plan lookup, the local tier, the decision, its receipt and the counts) is what the limiter adds.',
    '',
    `| load | in flight | ${ALL.map((s) => s.limiter).join(' | ')} |`,
    `|---|---|${ALL.map(() => '---|').join('')}`,
  ]
  for (const load of ['admitted', 'denied'] as const) {
    for (const inFlight of IN_FLIGHT) {
      const cells = ALL.map(({ limiter }) =>
        formatRate(
          rows.find((r) => r.load === load && r.inFlight === inFlight && r.limiter === limiter)?.perSecond ?? 0,
        ),
      )
      lines.push(`| ${load} | ${inFlight} | ${cells.join(' | ')} |`)
    }
  }
  return `${lines.join('\n')}\n`
}
