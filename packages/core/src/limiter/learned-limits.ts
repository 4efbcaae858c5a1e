// What a fleet learned of an upstream's quota, per key: a limit below the configured one, kept in the store as a
// note beside the key's window (Store.readNote/writeNote) so that every process holds to one value. Each process
// caches it for a short while, and drops the cache when the store announces a change of the key.

import { OptionError } from '../common/errors.js'
import { checkInteger } from '../common/validate.js'
import { createNotes } from '../store/memory/notes.js'
import type { NoteState, Store } from '../store/store.js'
import type { KeyInput } from './keys.js'
import { MAX_LIMIT, type Policy } from './policy.js'

/** A learned limit and where it came from: the upstream's quota headers, or its 429s (AIMD). */
export interface LearnedLimit {
  /** The limit per window the fleet holds to now: below the policy's. */
  readonly limit: number
  readonly source: 'headers' | 'aimd'
}

/**
 * What limitedFetch teaches: a quota the upstream stated (per the policy's window), or a 429 (AIMD: cut), with the
 * units the window held when the refused call was admitted (`used`), when known: what the upstream let through.
 */
export type Lesson = (
  | { readonly source: 'headers'; readonly limit: number }
  | { readonly source: 'aimd'; readonly used?: number }
) & {
  /**
   * The policy it is about, by name: may be left out when one policy of the limiter learns (a rate policy, not
   * in-flight slots nor a calendar period).
   */
  readonly policy?: string
}

/**
 * A note's value: `h <limit> <until>` (headers: the limit, until that store time), or `a <limit> <at> <step>
 * [<below>]` (AIMD: the limit cut to at store time `at`, grown by `step` each window since, up to the policy's
 * limit; with `below`, the most the window held under the rate the upstream refused, where it stays PLATEAU_WINDOWS
 * windows before it grows past it).
 */
type Note =
  | { source: 'headers'; limit: number; until: number }
  | { source: 'aimd'; limit: number; at: number; step: number; below?: number }

/**
 * AIMD's cut: to this share of what the window held when the refused call was admitted (the rate the upstream
 * refused), or of the limit when lower. CUBIC's 0.7 rather than Reno's 0.5: in the outbound bench, 0.5 of the limit
 * took two cuts from a limit 3x too high, and left a quarter of the quota unused.
 */
const CUT_SHARE = 0.7
/** The share of the policy's limit AIMD grows back by each window without a 429 (at least 1). */
const GROW_SHARE = 0.02
/**
 * Windows AIMD holds just under the rate the upstream last refused before it probes past it: the rate it refused is
 * most often the quota itself, so growing straight through it costs a 429 every few windows.
 */
const PLATEAU_WINDOWS = 4
/** A headers note lives this many windows past the last response that stated it (at least HEADERS_MIN_TTL_MS). */
const HEADERS_WINDOWS = 2
const HEADERS_MIN_TTL_MS = 1_000

/** A lesson as given to `limiter.learn`, checked (its policy name apart, which the limiter checks). */
export function checkLesson(lesson: unknown): Lesson {
  const { source, limit, used } = (lesson ?? {}) as { source?: unknown; limit?: unknown; used?: unknown }
  if (source === 'aimd' && limit === undefined) {
    return used === undefined ? { source } : { source, used: checkInteger(used, 'lesson.used', 0, MAX_LIMIT) }
  }
  if (source === 'headers') return { source, limit: checkInteger(limit, 'lesson.limit', 1, MAX_LIMIT) }
  throw new OptionError(
    'lesson',
    lesson,
    "{ source: 'headers', limit } (a quota per the policy's window) or { source: 'aimd', used? } (a 429), each " +
      'with `policy` (its name) when several policies of the limiter learn',
  )
}

export function parseNote(value: string | undefined): Note | undefined {
  if (value === undefined) return undefined
  const [kind, ...rest] = value.split(' ')
  const numbers = rest.map(Number)
  if (!numbers.every((n) => Number.isSafeInteger(n) && n >= 0)) return undefined
  const [limit, time, step, below] = numbers as [number, number, number?, number?]
  if (kind === 'h' && numbers.length === 2 && limit >= 1) return { source: 'headers', limit, until: time }
  if (kind !== 'a' || limit < 1 || (step ?? 0) < 1) return undefined
  if (numbers.length === 3) return { source: 'aimd', limit, at: time, step: step as number }
  if (numbers.length === 4 && (below as number) >= limit) {
    return { source: 'aimd', limit, at: time, step: step as number, below: below as number }
  }
  return undefined
}

function formatNote(note: Note): string {
  if (note.source === 'headers') return `h ${note.limit} ${note.until}`
  const aimd = `a ${note.limit} ${note.at} ${note.step}`
  return note.below === undefined ? aimd : `${aimd} ${note.below}`
}

/** An AIMD note's limit `windows` whole windows after its cut: a step a window, held PLATEAU_WINDOWS at `below`. */
function grown(note: Extract<Note, { source: 'aimd' }>, windows: number): number {
  const { limit, step, below } = note
  const straight = limit + step * windows
  if (below === undefined || straight <= below) return straight
  const reached = Math.ceil((below - limit) / step)
  return windows < reached + PLATEAU_WINDOWS ? below : below + step * (windows - reached - PLATEAU_WINDOWS + 1)
}

/** The limit a note holds the fleet to at store time `now` under `policy`; undefined when none is below the policy's. */
export function limitOf(
  note: Note | undefined,
  now: number,
  policy: Pick<Policy, 'window' | 'limit'>,
): LearnedLimit | undefined {
  if (note === undefined) return undefined
  let limit: number
  if (note.source === 'headers') {
    if (note.until <= now) return undefined
    limit = note.limit
  } else {
    limit = grown(note, Math.floor(Math.max(0, now - note.at) / policy.window))
  }
  return limit < policy.limit ? { limit, source: note.source } : undefined
}

export interface LearnedLimitsOptions {
  readonly store: Store
  readonly policy: Policy
  /** Runs a store call bounded like a decision (the limiter's guarded caller). */
  readonly bounded: <T>(key: string, send: () => Promise<T>) => Promise<T>
  /** Told of each change this process sees of a key's learned limit (undefined: back to the policy's). */
  readonly changed: (key: string, learned: LearnedLimit | undefined, policy: string) => void
}

interface Cached {
  readonly value: string | undefined
  readonly note: Note | undefined
  /** The store's time when read, and this process's performance.now() then: the store time now is estimated. */
  readonly storeNow: number
  readonly readAt: number
}

/** The learned limits of one limiter's key windows (one policy's). */
export function createLearnedLimits({ store, policy, bounded, changed }: LearnedLimitsOptions) {
  // A store that keeps no notes: the learned limits stay in this process.
  const notes =
    store.readNote && store.writeNote
      ? { read: store.readNote.bind(store), write: store.writeNote.bind(store) }
      : inProcessNotes()
  // A cached note is read again after a window (at most a second), or as soon as the store says the key changed.
  const freshMs = Math.min(policy.window, 1_000)
  const cache = new Map<string, Cached>()
  const reading = new Map<string, Promise<LearnedLimit | undefined>>()
  const told = new Map<string, string>()
  const onChange = (keys: readonly string[] | undefined) => {
    if (keys === undefined) cache.clear()
    else for (const key of keys) cache.delete(key)
  }
  // Listens (a Redis store then subscribes) from the first use only: a limiter that never learns costs nothing.
  let active = false
  const activate = () => {
    if (active) return
    active = true
    store.onKeyChange?.(onChange)
  }

  const describe = (learned: LearnedLimit | undefined) => (learned ? `${learned.source} ${learned.limit}` : '')
  function remember(key: string, state: NoteState): LearnedLimit | undefined {
    const note = parseNote(state.value)
    cache.set(key, { value: state.value, note, storeNow: state.now, readAt: performance.now() })
    return current(key, note, state.now)
  }
  /** The limit at store time `now`, told to the listener when it differs from the last one told. */
  function current(key: string, note: Note | undefined, now: number): LearnedLimit | undefined {
    const learned = limitOf(note, now, policy)
    const said = describe(learned)
    if ((told.get(key) ?? '') !== said) {
      if (said === '') told.delete(key)
      else told.set(key, said)
      changed(key, learned, policy.name)
    }
    return learned
  }
  const read = (key: string) => bounded(key, () => notes.read(key))
  /** The note as cached, with the store time now estimated; undefined when not cached or stale. */
  function cached(key: string): NoteState | undefined {
    const entry = cache.get(key)
    const age = entry && performance.now() - entry.readAt
    return entry && (age as number) < freshMs
      ? { value: entry.value, now: entry.storeNow + (age as number) }
      : undefined
  }
  const write = (key: string, note: Note | undefined, ttlMs: number, expected?: string | null) =>
    bounded(key, () => notes.write(key, note && formatNote(note), ttlMs, expected))

  return {
    /** Whether this limiter learned or asked what was learned: only then does its peek read the notes. */
    get active() {
      return active
    },
    /** The limit the fleet holds `key` to now; undefined for the policy's. Cached; a failed read rejects. */
    learned(key: string): LearnedLimit | undefined | Promise<LearnedLimit | undefined> {
      activate()
      const state = cached(key)
      if (state) return current(key, parseNote(state.value), state.now)
      let pending = reading.get(key)
      if (pending === undefined) {
        pending = read(key)
          .then((state) => remember(key, state))
          .finally(() => reading.delete(key))
        reading.set(key, pending)
      }
      return pending
    },

    /** Learns from an upstream's answer; resolves with the limit the fleet holds `key` to after it. */
    async learn(key: string, lesson: Lesson): Promise<LearnedLimit | undefined> {
      activate()
      // A quota stated again is checked against the cached note: most answers then cost no store call. A cut reads
      // afresh, and writes only over what it read.
      const state = (lesson.source === 'headers' && cached(key)) || (await read(key))
      const note = parseNote(state.value)
      const { now } = state
      const before = limitOf(note, now, policy)
      if (lesson.source === 'headers') {
        const ttlMs = Math.max(HEADERS_MIN_TTL_MS, HEADERS_WINDOWS * policy.window)
        if (lesson.limit >= policy.limit) {
          // The upstream allows the policy's limit: a lower one learned from headers ends now.
          if (note?.source !== 'headers') return remember(key, state)
          return remember(key, await write(key, undefined, 1, state.value))
        }
        // The same limit, still good for more than half its life: nothing to write.
        if (note?.source === 'headers' && note.limit === lesson.limit && note.until - now > ttlMs / 2) {
          return remember(key, state)
        }
        const until = Math.ceil(now + ttlMs)
        return remember(key, await write(key, { source: 'headers', limit: lesson.limit, until }, ttlMs))
      }
      // AIMD: one cut per window, since the 429s of calls sent before the last cut say nothing new.
      if (note?.source === 'aimd' && now - note.at < policy.window) return remember(key, state)
      const base = Math.min(before?.limit ?? policy.limit, lesson.used ?? Number.POSITIVE_INFINITY)
      const limit = Math.max(1, Math.floor(base * CUT_SHARE))
      const step = Math.max(1, Math.round(policy.limit * GROW_SHARE))
      const cut: Note = { source: 'aimd', limit, at: Math.floor(now), step }
      // The window held `used` when the refused call was admitted: the upstream allows less.
      if (lesson.used !== undefined && lesson.used - 1 > limit) cut.below = lesson.used - 1
      // Until it has grown back to the policy's limit (past its plateau), and a window more.
      const plateau = cut.below === undefined ? 0 : PLATEAU_WINDOWS
      const ttlMs = (Math.ceil((policy.limit - limit) / step) + plateau + 1) * policy.window
      // Another process wrote first: its note stands (a cut of the same 429s, most likely).
      return remember(key, await write(key, cut, ttlMs, state.value ?? null))
    },
  }
}

export type LearnedLimits = ReturnType<typeof createLearnedLimits>

/** Whether a limit can be learned for a policy: a rate of units per window (not slots, not a calendar count). */
export const canLearn = (policy: Policy) => policy.concurrency === undefined && policy.period === undefined

/**
 * A limiter's `learned` and `learn`: one learned limit per rate policy, each through its own window key, so that
 * an upstream's requests and tokens quotas lower the limiter's requests and tokens policies each on its own. A
 * limiter with no rate policy (in-flight slots, calendar periods) learns nothing, and refuses a lesson.
 */
export function createLearning(
  policies: readonly Policy[],
  options: Omit<LearnedLimitsOptions, 'policy'> & {
    /** The store key of a key input's window of the i-th policy. */
    readonly windowKeyOf: (key: KeyInput, index: number) => string
  },
) {
  const { windowKeyOf } = options
  const limits = policies.map((policy) => (canLearn(policy) ? createLearnedLimits({ ...options, policy }) : undefined))
  const learning = policies.filter(canLearn).map((p) => p.name)
  /** The index of the policy a call names; by default the first (reads) or the one that learns (lessons). */
  function indexOf(name: unknown, option: string, lesson: boolean): number {
    if (name === undefined) {
      if (!lesson) return 0
      if (learning.length === 1) return policies.findIndex(canLearn)
    } else if (typeof name === 'string') {
      const i = policies.findIndex((p) => p.name === name)
      if (i >= 0 && (limits[i] !== undefined || !lesson)) return i
    }
    throw new OptionError(
      option,
      name,
      learning.length === 0
        ? 'a limiter with a rate policy: in-flight slots and calendar periods learn no limit'
        : `the name of a policy that learns: ${learning.map((n) => `'${n}'`).join(', ')}` +
            (name === undefined ? ' (this limiter has several)' : ''),
    )
  }
  const anyActive = () => limits.some((l) => l?.active)
  return {
    /** The learned limit of a policy (by name; default the first). */
    async learned(key: KeyInput, policy?: string): Promise<LearnedLimit | undefined> {
      const i = indexOf(policy, 'learned(key, policy)', false)
      return limits[i]?.learned(windowKeyOf(key, i))
    },
    /**
     * For peek: each policy's learned limit (in the limiter's order), once this limiter takes part in learning (a
     * peek alone costs no extra call); undefined when it does not.
     */
    async peekLearned(key: KeyInput): Promise<readonly (LearnedLimit | undefined)[] | undefined> {
      if (!anyActive()) return undefined
      return Promise.all(limits.map((l, i) => l?.learned(windowKeyOf(key, i))))
    },
    async learn(key: KeyInput, lesson: Lesson): Promise<LearnedLimit | undefined> {
      const checked = checkLesson(lesson)
      const i = indexOf((lesson as { policy?: unknown }).policy, 'lesson.policy', true)
      return (limits[i] as LearnedLimits).learn(windowKeyOf(key, i), checked)
    },
  }
}

/** Notes for a store that keeps none: this process's alone. */
function inProcessNotes() {
  const notes = createNotes(100_000, () => performance.now())
  return {
    read: async (key: string) => notes.read(key),
    write: async (key: string, value: string | undefined, ttlMs: number, expected?: string | null) =>
      notes.write(key, value, ttlMs, expected),
  }
}
