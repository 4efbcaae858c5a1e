import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { redisUrl } from './root-hooks.js'

/** A client of the test Redis; close it in an after hook. */
export function redisClient(): Redis {
  return new Redis(redisUrl(), { lazyConnect: false, maxRetriesPerRequest: 1 })
}

/** A key prefix no other test uses, so tests never need to flush a server they may not own. */
export function uniquePrefix(): string {
  return `fltest-${randomBytes(6).toString('hex')}`
}
