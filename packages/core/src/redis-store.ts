import { randomBytes } from 'node:crypto'
import { OptionError, StoreError } from './errors.js'
import { checkOptionNames } from './options.js'
import { createScriptRunner, type ScriptClient } from './script-runner.js'
import { slidingWindowScript } from './scripts.generated.js'
import { STORE, type Store, type WindowRequest, type WindowResult } from './store.js'

export interface RedisStoreOptions {
  /** The first part of every key. Default 'fleetlimit'. */
  prefix?: string
}

const PREFIX_PATTERN = /^[^\s{}]{1,64}$/

/**
 * The fleet store: every decision is one call of lua/sliding-window.lua on the given ioredis
 * `Redis` or `Cluster`, which is used as it is (fleetlimit defines nothing on it and never closes it).
 */
export function redisStore(client: ScriptClient, options: RedisStoreOptions = {}): Store {
  if (!isScriptClient(client)) {
    throw new OptionError('redisStore(client)', client, 'an ioredis Redis or Cluster instance')
  }
  checkOptionNames(options, 'redisStore', ['prefix'])
  const prefix = options.prefix ?? 'fleetlimit'
  if (typeof prefix !== 'string' || !PREFIX_PATTERN.test(prefix)) {
    throw new OptionError('redisStore.prefix', prefix, '1 to 64 characters with no whitespace and no `{` or `}`')
  }

  const runner = createScriptRunner(client)
  // Members must be unique across the fleet: a random tag per store, then a counter.
  const tag = randomBytes(8).toString('base64url')
  let counter = 0

  async function decide(request: WindowRequest, mode: 'consume' | 'peek'): Promise<WindowResult> {
    const member = mode === 'consume' ? tag + (counter++).toString(36) : ''
    const reply = await runner.run(
      slidingWindowScript,
      [`${prefix}:${request.key}`],
      [request.limit, request.windowMs, request.cost, member, mode],
    )
    return parseReply(reply)
  }

  return {
    [STORE]: true,
    consume: (request) => decide(request, 'consume'),
    peek: (request) => decide(request, 'peek'),
    reset: async (key) => {
      await client.del(`${prefix}:${key}`)
    },
  }
}

function isScriptClient(client: unknown): client is ScriptClient {
  const candidate = client as Partial<Record<'evalsha' | 'eval' | 'del', unknown>> | null
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    typeof candidate.evalsha === 'function' &&
    typeof candidate.eval === 'function' &&
    typeof candidate.del === 'function'
  )
}

function parseReply(reply: unknown): WindowResult {
  if (!Array.isArray(reply) || reply.length < 5 || !reply.every((n) => typeof n === 'number')) {
    throw new StoreError(`unexpected reply from the sliding-window script: ${JSON.stringify(reply)}`)
  }
  const [allowed, remaining, retryAfterMs, resetMs, nowUs] = reply as number[]
  return {
    allowed: allowed === 1,
    remaining: remaining as number,
    retryAfterMs: retryAfterMs as number,
    resetMs: resetMs as number,
    now: (nowUs as number) / 1000,
  }
}
