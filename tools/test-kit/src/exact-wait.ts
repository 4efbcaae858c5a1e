import { expect } from 'chai'
import { sleep } from './sleep.js'

export interface TimedAnswer {
  readonly allowed: boolean
  readonly retryAfterMs: number
  /** The store clock's time of the answer, in ms. */
  readonly now: number
}

/**
 * Checks a promised wait against the store's own clock, whatever the scheduler does to our sleeps: sleeps
 * until 5 ms before `fitsAt`, expects every answer more than the 1 ms rounding before it to be a denial
 * promising the same instant, and expects the first answer at or after it to be an admission. Timers may
 * fire a little early, so an early answer is followed by another sleep rather than counted as a failure.
 */
export async function expectAdmittedExactlyAt(fitsAt: number, now: number, call: () => Promise<TimedAnswer>) {
  await sleep(Math.max(0, fitsAt - now - 5))
  let early = 0
  for (let attempt = 0; attempt < 20; attempt++) {
    const answer = await call()
    // Waits are whole milliseconds, rounded up: within the last millisecond before the promise either
    // answer is exact, so only answers at or after the promise must be admissions.
    if (answer.now >= fitsAt - 1 && answer.now < fitsAt) {
      if (answer.allowed) return { early }
      await sleep(answer.retryAfterMs)
      continue
    }
    if (answer.now < fitsAt - 1) {
      expect(answer.allowed, `admitted ${fitsAt - answer.now} ms before the promised time`).to.equal(false)
      expect(answer.now + answer.retryAfterMs).to.be.closeTo(fitsAt, 1)
      early++
      await sleep(answer.retryAfterMs)
      continue
    }
    expect(answer.allowed, 'admitted at the promised time').to.equal(true)
    return { early }
  }
  throw new Error('the store clock never reached the promised time')
}
