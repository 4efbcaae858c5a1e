import { OptionError } from '../common/errors.js'
import { combine, type Decision } from '../limiter/decision.js'
import { definePolicy, MAX_CONCURRENCY, type Policy, type PolicyOptions } from '../limiter/policy.js'

/** What an adapter's `concurrency` option accepts. */
export const CONCURRENCY_ACCEPTS = `a whole number from 1 to ${MAX_CONCURRENCY}, or a function of the request that returns one`

/** The name of the in-flight policy a `concurrency(req)` function sets the limit of, unless the options name it. */
const PER_REQUEST_NAME = 'in-flight'

/**
 * The in-flight policy an adapter's `concurrency` option adds after its rate policies (`rates`: their resolved
 * policies, none for an in-flight limit alone). A function of the request gets the largest concurrency as its
 * policy's, each request naming its own limit. Its failure mode, scope, deadline and shadow follow the rate
 * policies (fail-open, per tenant or shadow only when every one is), so that adding it changes nothing else about
 * them; `own` (the inline options of an in-flight limit alone: name, scope, …) sets them instead.
 */
export function inFlightPolicy(
  concurrency: unknown,
  slotTtlMs: PolicyOptions['slotTtlMs'],
  rates: readonly Policy[],
  own: Partial<PolicyOptions> | undefined,
): Policy {
  const perRequest = typeof concurrency === 'function'
  if (!perRequest && !(Number.isInteger(concurrency) && (concurrency as number) >= 1)) {
    throw new OptionError('concurrency', concurrency, CONCURRENCY_ACCEPTS)
  }
  const settings: Partial<PolicyOptions> = own ?? {
    scope: rates.length > 0 && rates.every((p) => p.scope === 'tenant') ? 'tenant' : 'route',
    onStoreError: rates.length > 0 && rates.every((p) => p.onStoreError === 'fail-open') ? 'fail-open' : 'fail-closed',
    shadow: rates.length > 0 && rates.every((p) => p.shadow),
    ...(rates.length > 0 && { timeoutMs: Math.min(...rates.map((p) => p.timeoutMs)) }),
  }
  const name = settings.name ?? (perRequest ? PER_REQUEST_NAME : undefined)
  return definePolicy({
    ...settings,
    ...(name !== undefined && { name }),
    concurrency: perRequest ? MAX_CONCURRENCY : (concurrency as number),
    ...(slotTtlMs !== undefined && { slotTtlMs }),
  })
}

/**
 * What Retry-After (and the in-flight items' `t`) tells a client denied by an in-flight policy: at most this
 * long. The decision's wait is until the soonest slot EXPIRES (up to slotTtlMs, a minute by default), yet a slot
 * comes back whenever a request in flight ends, at any moment and usually far sooner; no store knows when. One
 * second is the shortest Retry-After there is: a client that waits it finds a slot as soon as one is likely free.
 */
const IN_FLIGHT_RETRY_MS = 1_000

/**
 * A denial as the client is told it: each in-flight policy's wait capped at IN_FLIGHT_RETRY_MS (its soonest
 * expiry, when sooner), then the policies combined again, so that a rate policy that denies too sets the wait
 * (its quota does not come back sooner) and names the policy. `inFlight`: the limiter's in-flight policies, by
 * name.
 */
export function answeredDenial(decision: Decision, inFlight: ReadonlySet<string>): Decision {
  const capped = (d: Decision) =>
    d.allowed || d.retryAfterMs <= IN_FLIGHT_RETRY_MS || !inFlight.has(d.policy)
      ? d
      : { ...d, retryAfterMs: IN_FLIGHT_RETRY_MS }
  return decision.policies ? combine(decision.policies.map(capped)) : capped(decision)
}

/** Whether only in-flight policies deny this call (for `concurrencyStatusCode`): no rate policy does. */
export function deniedInFlightOnly(decision: Decision, inFlight: ReadonlySet<string>): boolean {
  return (decision.policies ?? [decision]).every((d) => d.allowed || d.shadow || inFlight.has(d.policy))
}
