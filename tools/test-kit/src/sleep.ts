// The global setTimeout, so that a test's fake timers move it (they do not move node:timers/promises); a wait
// already past (a deadline minus now) resolves on the next timer, without newer Node's TimeoutNegativeWarning.
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))
