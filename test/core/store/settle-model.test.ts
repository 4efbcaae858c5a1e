import { expect } from 'chai'
import fc from 'fast-check'
import { memoryStore } from '../../../packages/core/src/store/memory-store.js'
import type { WindowResult } from '../../../packages/core/src/store/store.js'
import {
  compareSettleModel,
  exactly,
  type ModelResult,
  type SettleSubject,
  settleConfig,
  settleSteps,
} from '../../support/settle-model.js'

/**
 * The memory store as a settle-model subject, on an injected clock in whole ms (its times are ms): a rate window's
 * stamp in µs, a slot's id as the store gave it.
 */
function memorySubject(): SettleSubject {
  let nowUs = 0
  const store = memoryStore({ clock: () => nowUs / 1000 })
  const result = ({ allowed, remaining, retryAfterMs, resetMs, recorded }: WindowResult, slot: boolean) => {
    const r: ModelResult = { allowed, remaining, retryAfterMs, resetMs }
    if (recorded !== undefined) r.recorded = slot ? recorded : recorded * 1000
    return r
  }
  return {
    setNow(us) {
      nowUs = us
    },
    async decide(windows, peek) {
      const results = peek ? await store.peek(windows) : await store.consume(windows)
      return results.map((r, i) => result(r, windows[i]?.slots === true))
    },
    free: (slots) => store.free(slots),
    extend: (slots, ms) => store.extend(slots, ms),
    settle: (requests, id) =>
      store.settle(
        requests.map(({ key, windowMs, recordedUs, delta }) => ({ key, windowMs, recorded: recordedUs / 1000, delta })),
        id,
      ),
    refund: (requests, id) =>
      store.refund(
        requests.map(({ key, windowMs, recordedUs, units }) => ({ key, windowMs, recorded: recordedUs / 1000, units })),
        0,
        id,
      ),
  }
}

/** Every case a run of schedules must come upon. */
const SEEN = [
  'admitted',
  'admitted with a slot',
  'already-settled',
  'denied',
  'denied a slot',
  'expired',
  'extended',
  'extended none',
  'forged id',
  'freed',
  'freed none',
  'refund after a settle',
  'refund already-refunded',
  'refund answer lost',
  'refund expired',
  'refund refunded',
  'refunded',
  'settle answer lost',
  'settled',
  'settled down, capped',
  'settled up',
  'taken id',
]

describe('memoryStore against the reference model of settles and slots (fast-check, injected clock)', () => {
  it('every reply is the model’s: mixed costs, slot windows, shadows, settles up and down, refunds, retries, lost answers, frees, extends', async function () {
    this.timeout(60_000)
    let compared = 0
    let run = 0
    const seen = new Map<string, number>()
    await fc.assert(
      fc.asyncProperty(settleConfig(), settleSteps(120), async (config, steps) => {
        run++
        const keys = [`{r${run}}:rpm`, `{r${run}}:tpm`, `{r${run}}:par`] as const
        compared += await compareSettleModel(
          memorySubject(),
          keys,
          config,
          steps,
          1000,
          1_700_000_000_000_000,
          exactly,
          seen,
        )
      }),
      { numRuns: 200, seed: 32 },
    )
    expect(compared, 'replies checked against the model').to.be.greaterThan(8_000)
    expect([...seen.keys()].sort(), JSON.stringify([...seen])).to.deep.equal(SEEN)
  })
})
