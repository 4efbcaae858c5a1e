import type { Decision, RateLimiter } from '@fleetlimit/core'
import { expect } from 'chai'
import fc from 'fast-check'

/**
 * How a settle or a refund reaches the store: 'none' as usual; 'unsent' fails without being applied (or, on a
 * real server, maybe applied: see the subject); 'lost' is applied, but its answer does not reach the caller in time.
 */
export type Fault = 'none' | 'unsent' | 'lost'

/** What the receipt model drives: one limiter (one policy, one tenant) and a way to fail its store's answers. */
export interface ReceiptSubject {
  readonly limiter: RateLimiter
  /** Runs `call` (one settle or refund) with its store call failing as `fault` says. */
  withFault<T>(fault: Fault, call: () => Promise<T>): Promise<T>
  /** Units the tenant's window holds now. */
  used(): Promise<number>
}

export type ReceiptStep =
  | { readonly op: 'consume'; readonly count: number; readonly cost: number; readonly settleTo: number }
  | { readonly op: 'settle' | 'refund'; readonly pick: number; readonly fault: Fault }

/** Whether an operation was applied in the store: 'maybe' after a failure whose fate no answer told yet. */
type Known = 'no' | 'yes' | 'maybe'

interface Admission {
  readonly decision: Decision
  readonly admitted: number
  /** The cost every settle of it asks (a decision is settled to one cost). */
  readonly settleTo: number
  settle: Known
  refund: Known
}

const choices = (known: Known): boolean[] => (known === 'maybe' ? [false, true] : [known === 'yes'])

/** The units an admission may hold in the store now, by what its settle and refund may have done. */
function possible(a: Admission, refund = a.refund): Set<number> {
  const units = new Set<number>()
  for (const refunded of choices(refund)) {
    for (const settled of choices(a.settle)) units.add(refunded ? 0 : settled ? a.settleTo : a.admitted)
  }
  return units
}

/**
 * Runs `steps` on `subject` and checks every answer against the model of receipts: a settle, once applied, sets
 * an admission's units to its cost; a refund removes exactly the units the admission holds then (its admission and
 * the settle if applied), once; a settle after a refund changes nothing. A failed call may have been applied: the
 * model keeps both fates until a later answer tells which, and the window must hold between the fewest and the
 * most units the fates allow, exactly once every fate is known. At the end every admission is refunded, and the
 * window holds nothing. Returns the steps checked; `seen` tallies the answers.
 */
export async function compareReceiptModel(
  subject: ReceiptSubject,
  steps: readonly ReceiptStep[],
  seen: Map<string, number> = new Map(),
): Promise<number> {
  const saw = (what: string) => seen.set(what, (seen.get(what) ?? 0) + 1)
  const { limiter } = subject
  const admissions: Admission[] = []
  let checked = 0

  const checkUsed = async (what: string) => {
    let least = 0
    let most = 0
    for (const a of admissions) {
      const units = [...possible(a)]
      least += Math.min(...units)
      most += Math.max(...units)
    }
    const used = await subject.used()
    expect(used, `${what}: the window holds between ${least} and ${most} units`).to.be.within(least, most)
    checked++
  }

  async function refund(a: Admission, fault: Fault, what: string): Promise<void> {
    const tried = await subject.withFault(fault, () => limiter.refund(a.decision)).catch((error: unknown) => error)
    if (!('outcome' in (tried as object))) {
      saw(`refund failed (${fault})`)
      if (a.refund === 'no') a.refund = 'maybe'
      return
    }
    const { units, outcome } = tried as Awaited<ReturnType<RateLimiter['refund']>>
    saw(`refund ${outcome}`)
    if (outcome === 'already-refunded') {
      expect(a.refund, `${what}: already refunded, so a refund was applied`).to.not.equal('no')
      a.refund = 'yes'
      return
    }
    expect(a.refund, `${what}: a refund applied before is not applied again`).to.not.equal('yes')
    expect([outcome, [...possible(a, 'no')]], what).to.satisfy(
      ([o, held]: [string, number[]]) => (o === 'refunded' || o === 'expired') && held.includes(units),
    )
    if (outcome === 'expired') expect(units, what).to.equal(0)
    // What it removed tells whether the settle was applied.
    if (a.settle === 'maybe' && a.admitted !== a.settleTo) a.settle = units === a.settleTo ? 'yes' : 'no'
    if (a.settle === 'maybe') a.settle = 'no'
    if (outcome === 'refunded') a.refund = 'yes'
    else {
      // Nothing to remove (settled to 0): the refund recorded nothing either.
      saw('refund of a decision settled to 0')
      a.refund = 'no'
    }
  }

  for (const [i, step] of steps.entries()) {
    const what = `step ${i} (${step.op}) of ${JSON.stringify(steps)}`
    if (step.op === 'consume') {
      // Several at once: one script run, so they share one entry of the window.
      const decisions = await Promise.all(
        Array.from({ length: step.count }, () => limiter.consume('t', { cost: step.cost })),
      )
      for (const decision of decisions) {
        expect(decision.allowed, what).to.equal(true)
        admissions.push({ decision, admitted: step.cost, settleTo: step.settleTo, settle: 'no', refund: 'no' })
      }
      await checkUsed(what)
      continue
    }
    const a = admissions[step.pick % Math.max(1, admissions.length)]
    if (!a) continue
    if (step.op === 'refund') await refund(a, step.fault, what)
    else {
      const tried = await subject
        .withFault(step.fault, () => limiter.settle(a.decision, { cost: a.settleTo }))
        .catch((error: unknown) => error)
      if (!('outcome' in (tried as object))) {
        saw(`settle failed (${step.fault})`)
        if (a.settle === 'no') a.settle = 'maybe'
      } else {
        const { outcome } = tried as Awaited<ReturnType<RateLimiter['settle']>>
        saw(`settle ${outcome}`)
        if (outcome === 'refunded') {
          expect(a.refund, `${what}: refunded, so a refund was applied`).to.not.equal('no')
          a.refund = 'yes'
        } else if (outcome !== 'already-settled' || a.settle !== 'yes') {
          // (An 'already-settled' of a settle known to be applied is its answer, known before: nothing changed.)
          expect(outcome, what).to.be.oneOf(['settled', 'already-settled'])
          expect(a.refund, `${what}: a settle after a refund applies nothing`).to.not.equal('yes')
          if (outcome === 'settled') expect(a.settle, `${what}: applied once`).to.not.equal('yes')
          // The store's answer: a refund that may have been applied before would have made it 'refunded'.
          a.settle = 'yes'
          a.refund = 'no'
        }
      }
    }
    await checkUsed(what)
  }
  // Every admission refunded: exactly what each holds comes out, so nothing is left and nothing was taken twice.
  for (const [i, a] of admissions.entries()) await refund(a, 'none', `final refund of admission ${i}`)
  for (const a of admissions) expect(possible(a), 'every fate known at the end').to.have.property('size', 1)
  await checkUsed('after every refund')
  expect(await subject.used(), 'nothing left after every refund').to.equal(0)
  return checked
}

/** Random schedules of up to `maxLength` steps: bursts of admissions, and settles and refunds, failing or not. */
export function receiptSteps(maxLength: number): fc.Arbitrary<ReceiptStep[]> {
  const fault = fc.constantFrom<Fault>('none', 'none', 'unsent', 'lost')
  const step: fc.Arbitrary<ReceiptStep> = fc.oneof(
    {
      weight: 2,
      arbitrary: fc.record({
        op: fc.constant('consume' as const),
        count: fc.integer({ min: 1, max: 3 }),
        cost: fc.integer({ min: 1, max: 10 }),
        settleTo: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 60 })),
      }),
    },
    { weight: 5, arbitrary: fc.record({ op: fc.constantFrom('settle', 'refund'), pick: fc.nat(), fault }) },
  )
  return fc.array(step, { minLength: 1, maxLength, size: 'max' })
}
