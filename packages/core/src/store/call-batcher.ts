import { type Scheduled, scheduleImmediate } from '../common/timer.js'
import type { ScriptRunner } from './script-runner.js'
import { slidingLogScript } from './scripts.generated.js'
import { splitRun } from './sliding-log-call.js'

/** One call of lua/sliding-log.lua: its keys, its binary argument, and its reply's bytes after the head (replyBody). */
interface Call {
  readonly keys: readonly string[]
  readonly bytes: Buffer
  readonly body: number
  readonly server: string | undefined
  readonly resolve: (reply: Buffer) => void
  readonly reject: (error: unknown) => void
}

export interface CallBatcher {
  /**
   * Sends a call of lua/sliding-log.lua with the other calls of this turn of the event loop; its own reply. The
   * caller may give its keys' server and group where it knows them (see ScriptRunner, and groupOf).
   */
  run(keys: readonly string[], bytes: Buffer, body: number, server?: string, group?: string): Promise<Buffer>
}

const RESOLVED = Promise.resolve()
const AFTER_CALLBACK = 'after the callback'

// The most calls in one script run: a run is atomic, so this bounds how long one holds the server.
export const MAX_BATCH = 16

/**
 * Gathers the calls of lua/sliding-log.lua made in one turn of the event loop into one script run per group (on a
 * Cluster, per slot: a run's keys must share one), sent once the turn's callbacks have run (setImmediate). Under
 * load a process makes many decisions at once, and then they cost one round trip, one write and one TIME where
 * they cost one each. While no run is in flight nothing else is coming back to join a run: the calls made so far
 * go as soon as the current callback is done (a burst made at once still goes as one run), with no hop to the end
 * of the turn; a call made alone goes alone. The script decides each call as if it were made alone
 * and reports an error about one call's key in that call's reply, so one tenant's broken key fails its own calls.
 */
export function createCallBatcher(
  runner: ScriptRunner,
  groupOf: (key: string) => string,
  maxBatch = MAX_BATCH,
): CallBatcher {
  const waiting = new Map<string, Call[]>()
  // The pending flush, undefined when none is: at the end of the turn, or a promise job (which no fake timers hold).
  // A stale one may never run: the next call schedules the flush again rather than wait for MAX_BATCH calls.
  let scheduled: Scheduled | typeof AFTER_CALLBACK | undefined
  // Runs sent and not answered yet.
  let running = 0
  const answered = () => {
    running--
  }

  const flush = () => {
    scheduled = undefined
    for (const calls of waiting.values()) send(calls)
    waiting.clear()
  }

  /** Sends calls of one group: a lone call as it is, several as one run. */
  function send(calls: readonly Call[]): void {
    const [only] = calls
    running++
    if (calls.length === 1 && only) {
      const sent = runner.runBuffer(slidingLogScript, only.keys, [only.bytes], only.server)
      sent.then(answered, answered)
      sent.then(only.resolve, only.reject)
    } else void sendRun(calls)
  }

  async function sendRun(calls: readonly Call[]): Promise<void> {
    let parts: Buffer[]
    try {
      const keys = calls.flatMap((call) => call.keys)
      // The calls as one argument (each starts with its length): a client encodes each argument it sends, and
      // one per call cost ioredis more than the rest of the run.
      const bytes = Buffer.concat(calls.map((call) => call.bytes))
      const sent = runner.runBuffer(slidingLogScript, keys, [bytes], calls[0]?.server)
      sent.then(answered, answered)
      const reply = await sent
      parts = splitRun(
        reply,
        calls.map((call) => call.body),
      )
    } catch (error) {
      // Refused before it ran (NOPERM: a key the ACL user may not touch): nothing was recorded, so each call goes
      // alone and only the call that names that key fails. Any other refusal would refuse each call alike.
      if (error instanceof Error && error.message.startsWith('NOPERM')) {
        for (const call of calls) send([call])
      } else {
        for (const call of calls) call.reject(error)
      }
      return
    }
    for (const [i, call] of calls.entries()) call.resolve(parts[i] as Buffer)
  }

  return {
    run(keys, bytes, body, server, group = groupOf(keys[0] ?? '')) {
      return new Promise<Buffer>((resolve, reject) => {
        let calls = waiting.get(group)
        if (!calls) {
          calls = []
          waiting.set(group, calls)
        }
        calls.push({ keys, bytes, body, server, resolve, reject })
        if (calls.length >= maxBatch) {
          waiting.delete(group)
          send(calls)
        } else if (scheduled === undefined || (scheduled !== AFTER_CALLBACK && scheduled.stale)) {
          if (running === 0) {
            scheduled = AFTER_CALLBACK
            void RESOLVED.then(flush)
          } else scheduled = scheduleImmediate(flush)
        }
      })
    },
  }
}
