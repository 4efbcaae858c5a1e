// The limiters the in-flight part measures. Each is a module that every worker process imports, exporting
// `createGate`: the limiter set up on the fleet's Redis as its documentation does, as one function that runs a
// call once the fleet's limits allow it.

/** The scenario's limits, and where the fleet shares them. */
export interface GateOptions {
  readonly redisUrl: string
  /** Shared by every process of one run, by no two runs: a peer's key, id or prefix. */
  readonly key: string
  /** Calls in flight at once, fleet-wide. */
  readonly concurrency: number
  /** Calls started in any window of windowMs, fleet-wide. */
  readonly limit: number
  readonly windowMs: number
  /** For errors a peer reports outside a call (an 'error' event, a lost lock): each is recorded in the row. */
  readonly onError: (error: unknown) => void
}

/** One call to the upstream as its task saw it: 429 carries Retry-After (s); 200 the call's true cost. */
export interface CallResult {
  readonly status: number
  readonly retryAfterS: number
  readonly units: number
}

export interface Gate {
  /** Runs `call` once the fleet's limits allow it, and settles as it does. */
  run(call: () => Promise<CallResult>): Promise<CallResult>
  close(): Promise<void>
}

export type CreateGate = (options: GateOptions) => Promise<Gate>

export interface InFlightPeer {
  /** The row's `limiter` in the part's data. */
  readonly id: string
  /** Its name and version, as the table shows it. */
  readonly name: string
  /** Which of the scenario's limits it enforces, and how. */
  readonly enforces: string
  /** A module URL exporting `createGate: CreateGate`, imported by each worker process. */
  readonly module: string
}

const here = (file: string) => new URL(file, import.meta.url).href

export const IN_FLIGHT_PEERS: readonly InFlightPeer[] = [
  {
    id: 'bottleneck',
    name: 'Bottleneck 2.19 (clustering, ioredis)',
    enforces: 'both: maxConcurrent, and a reservoir refilled to the limit every window (a fixed window)',
    module: here('./in-flight-bottleneck.ts'),
  },
  {
    id: 'redis-semaphore',
    name: 'redis-semaphore 5.8 (Semaphore)',
    enforces: 'in flight only: a semaphore of `concurrency` permits, acquired by polling',
    module: here('./in-flight-semaphore.ts'),
  },
  {
    id: 'fleetlimit',
    name: 'fleetlimit',
    enforces:
      'both: an in-flight policy and a sliding window 100 ms longer than the upstream’s (for transit), in one script call',
    module: here('./in-flight-fleetlimit.ts'),
  },
]
