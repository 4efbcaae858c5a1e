// @fleetlimit/core/store: the contract a store implements, for someone who writes one (as redisStore and
// memoryStore do). A store is an object branded with STORE whose methods take and return the plain types below;
// the limiter calls it under timeoutMs and passes each recording call its deadline. Nothing here names the
// guards, clocks or batching of the Redis store: those stay inside it.
export type { Deadline } from './store/guarded-call.js'
export {
  EVERY_KEY,
  type HoldRequest,
  isStore,
  type Lease,
  type LeaseRequest,
  type LeaseResult,
  type RefundRequest,
  STORE,
  type Store,
  type StorePlan,
  type StoreRefund,
  type WindowRequest,
  type WindowResult,
} from './store/store.js'
