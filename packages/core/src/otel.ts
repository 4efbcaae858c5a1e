import { type Meter, metrics, type ObservableResult } from '@opentelemetry/api'
import packageJson from '../package.json' with { type: 'json' }
import { checkOptionNames, optionNames } from './common/validate.js'
// Through the main entry, so that the build ships one copy of core that both entries share.
import { type BreakerState, OptionError, type RateLimiter } from './index.js'

export interface InstrumentOptions {
  /** Where the instruments are made. Default: the meter '@fleetlimit/core' of the global MeterProvider. */
  meter?: Meter
}

const BREAKER_STATES: Record<BreakerState, number> = { closed: 0, 'half-open': 1, open: 2 }
const ERROR_TYPES = { error: 'error', timeout: 'timeout', 'short-circuit': 'short_circuit' } as const
// Seconds, from a local Redis's fraction of a millisecond to a one-second deadline.
const DURATION_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]

/**
 * Records the limiter's decisions, store calls and breaker state as OpenTelemetry metrics; returns the
 * function that stops recording. Attributes are the policy name and small fixed sets, never a key or tenant.
 *
 * @example
 * ```ts
 * const stop = instrumentLimiter(limiter, { meter: metrics.getMeter('my-service') })
 * ```
 */
export function instrumentLimiter(limiter: RateLimiter, options: InstrumentOptions = {}): () => void {
  if (typeof limiter?.on !== 'function' || typeof limiter.policy?.name !== 'string') {
    throw new OptionError('instrumentLimiter(limiter)', limiter, 'a limiter made by createRateLimiter')
  }
  checkOptionNames(options ?? {}, 'instrumentLimiter', optionNames<InstrumentOptions>({ meter: true }))
  if (options.meter !== undefined && typeof options.meter?.createCounter !== 'function') {
    throw new OptionError('instrumentLimiter.meter', options.meter, 'an OpenTelemetry Meter')
  }
  const meter = options.meter ?? metrics.getMeter('@fleetlimit/core', packageJson.version)

  const decisions = meter.createCounter('fleetlimit.decisions', {
    description: 'Decisions made, by policy, outcome and who made them',
    unit: '{decision}',
  })
  const storeCalls = meter.createCounter('fleetlimit.store.calls', {
    description: 'Calls sent to the store',
    unit: '{call}',
  })
  const storeErrors = meter.createCounter('fleetlimit.store.errors', {
    description: 'Decisions that could not use the store: failed, timed out, or short-circuited',
    unit: '{error}',
  })
  const localHits = meter.createCounter('fleetlimit.local.hits', {
    description: 'Decisions made by the local tier, with no store call',
    unit: '{decision}',
  })
  const storeDuration = meter.createHistogram('fleetlimit.store.duration', {
    description: 'Duration of the calls sent to the store',
    unit: 's',
    advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  })
  const breakerState = meter.createObservableGauge('fleetlimit.breaker.state', {
    description: "State of the store's circuit breaker: 0 closed, 1 half-open, 2 open",
  })

  // A store call and its failure belong to the limiter; with several policies it is named by the first.
  const policy = { 'fleetlimit.policy': limiter.policy.name }
  const unsubscribe = [
    limiter.on('decision', (decision) => {
      decisions.add(1, {
        'fleetlimit.policy': decision.policy,
        'fleetlimit.outcome': decision.shadowDenied ? 'shadow_denied' : decision.allowed ? 'allowed' : 'denied',
        'fleetlimit.source': decision.source,
      })
      if (decision.source === 'local') localHits.add(1, { 'fleetlimit.policy': decision.policy })
    }),
    limiter.on('storeCall', ({ durationMs, outcome }) => {
      storeCalls.add(1, policy)
      storeDuration.record(durationMs / 1_000, { ...policy, 'fleetlimit.store.outcome': outcome })
    }),
    limiter.on('storeError', (_error, kind) => storeErrors.add(1, { ...policy, 'error.type': ERROR_TYPES[kind] })),
  ]
  const observeBreaker = (result: ObservableResult) => {
    const state = limiter.breakerState
    if (state !== undefined) result.observe(BREAKER_STATES[state], policy)
  }
  breakerState.addCallback(observeBreaker)

  return () => {
    for (const off of unsubscribe) off()
    breakerState.removeCallback(observeBreaker)
  }
}
