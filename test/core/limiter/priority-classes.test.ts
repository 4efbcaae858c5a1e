import { createRateLimiter, definePolicy, memoryStore } from '@fleetlimit/core'
import { expect } from 'chai'
import { buildKey } from '../../../packages/core/src/limiter/keys.js'
import { policyKeyName } from '../../../packages/core/src/limiter/policy.js'
import {
  classIndexOf,
  resolvePriorities,
  shareKeyName,
  shareKeysOf,
  shareLimit,
} from '../../../packages/core/src/limiter/priority-classes.js'
import { optionErrorOf } from '../../support/option-error.js'

/** The coded OptionError a promise rejects with. */
async function rejectionOf(promise: Promise<unknown>) {
  let rejected: unknown
  await promise.catch((error: unknown) => {
    rejected = error
  })
  return optionErrorOf(() => {
    throw rejected
  })
}

const classes = [
  { name: 'interactive', share: 0.7 },
  { name: 'batch', share: 0.3 },
]

describe('priority classes: options, names and share keys', () => {
  it('resolves classes into a frozen list in rank order, on a sliding-log policy', () => {
    const policy = definePolicy({ name: 'api', limit: 20, window: '1s', priorities: classes })
    expect(policy.priorities).to.deep.equal(classes)
    expect(Object.isFrozen(policy.priorities)).to.equal(true)
    expect(Object.isFrozen(policy.priorities?.[0])).to.equal(true)
    // Shares that sum to 1 in decimals but not in doubles are accepted.
    expect(resolvePriorities([0.7, 0.2, 0.1].map((share, i) => ({ name: `c${i}`, share }))).length).to.equal(3)
  })

  it('refuses bad shares, sums over 1, bad, duplicate and hostile names, with a coded error that says what to do', () => {
    const refused = (priorities: unknown) =>
      optionErrorOf(() => definePolicy({ limit: 10, window: '1s', priorities: priorities as typeof classes }))
    expect(refused([{ name: 'a', share: 0 }, classes[1]]).message).to.equal(
      'fleetlimit: invalid option `priorities[0].share`: got 0; expected a number above 0 and at most 1, such as 0.7.',
    )
    expect(refused([{ name: 'a', share: 1.5 }, classes[1]]).option).to.equal('priorities[0].share')
    expect(refused([{ name: 'a', share: Number.NaN }, classes[1]]).option).to.equal('priorities[0].share')
    expect(refused([{ name: 'a', share: '0.5' }, classes[1]]).option).to.equal('priorities[0].share')
    expect(refused([{ name: 'a', share: 0.8 }, classes[1]]).message).to.equal(
      'fleetlimit: invalid option `priorities`: got "a 0.8, batch 0.3"; expected shares summing to at most 1 ' +
        '(these sum to 1.1): lower one.',
    )
    for (const name of ['', 'has space', 'a:b', 'x~y', '{tag}', '../', 'é', 'x'.repeat(65), 42]) {
      expect(refused([{ name, share: 0.5 }, classes[1]]).option, String(name)).to.equal('priorities[0].name')
    }
    expect(refused([classes[1], { name: 'batch', share: 0.1 }]).message).to.equal(
      'fleetlimit: invalid option `priorities[1].name`: got "batch"; expected a name no other class has.',
    )
    expect(refused([classes[0]]).option, 'one class').to.equal('priorities')
    expect(refused('interactive').option).to.equal('priorities')
    expect(refused(Array.from({ length: 9 }, (_, i) => ({ name: `c${i}`, share: 0.1 }))).option).to.equal('priorities')
    expect(refused([{ name: 'a', share: 0.5, weight: 2 }, classes[1]]).option).to.equal('priorities[0].weight')
    expect(refused([null, classes[1]]).option).to.equal('priorities[0]')
  })

  it('refuses priorities on a bucketed, calendar, in-flight or shadow policy, and on two policies of a limiter', () => {
    const on = (options: object) => optionErrorOf(() => definePolicy({ priorities: classes, ...options }))
    expect(on({ limit: 10, window: '1s', algorithm: 'bucketed' }).message).to.include(
      "no priorities with algorithm 'bucketed'",
    )
    expect(on({ limit: 10, period: 'day' }).message).to.include('no priorities on a calendar policy')
    expect(on({ concurrency: 3 }).option).to.equal('priorities')
    expect(on({ limit: 10, window: '1s', shadow: true }).message).to.include('no priorities on a shadow policy')
    const twice = optionErrorOf(() =>
      createRateLimiter({
        store: memoryStore(),
        policies: [
          { name: 'a', limit: 10, window: '1s', priorities: classes },
          { name: 'b', limit: 100, window: '1m', priorities: classes },
        ],
      }),
    )
    expect(twice.message).to.equal(
      'fleetlimit: invalid option `policies`: got "a, b"; expected priorities on one policy of a limiter at most: ' +
        'a call has one class.',
    )
  })

  it('takes the class a call names, the lowest for none, and refuses any other value with a coded error', async () => {
    expect(classIndexOf(classes, 'interactive')).to.equal(0)
    expect(classIndexOf(classes, undefined)).to.equal(1)
    const limiter = createRateLimiter({ store: memoryStore(), limit: 10, window: '1s', priorities: classes })
    expect(await limiter.consume('t', { priority: 'interactive' })).to.include({
      allowed: true,
      priority: 'interactive',
    })
    expect(await limiter.consume('t')).to.include({ allowed: true, priority: 'batch' })
    for (const priority of ['low', 'x'.repeat(100_000), '../', {}, ['batch'], 1, null, Symbol('batch')]) {
      const error = optionErrorOf(() => classIndexOf(classes, priority))
      expect(error.option).to.equal('priority')
      expect(error.message.length, 'a short message, whatever the value').to.be.below(400)
      expect(error.message).to.include("expected one of the policy's classes: interactive, batch.")
      const rejected = await rejectionOf(limiter.consume('t', { priority: priority as string }))
      expect(rejected.option).to.equal('priority')
      expect((await rejectionOf(limiter.peek('t', { priority: priority as string }))).option).to.equal('priority')
    }
    const plain = createRateLimiter({ store: memoryStore(), limit: 10, window: '1s' })
    expect((await rejectionOf(plain.acquire('t', { priority: 'batch' }))).message).to.equal(
      'fleetlimit: invalid option `priority`: got "batch"; expected no priority: give a policy `priorities` to call ' +
        'with classes.',
    )
  })

  it('keeps share keys apart from every tenant and route key, in the tenant’s hash tag', () => {
    const policy = definePolicy({ name: 'api', limit: 10, window: '1s', priorities: classes })
    const keyName = policyKeyName(policy)
    const main = buildKey(keyName, { tenant: 'acme', route: 'GET /x' })
    const [interactive, batch] = shareKeysOf(main, keyName, policy.priorities ?? [])
    expect(interactive).to.equal('api~sl3-1000~p-interactive:{acme}:GET%20/x')
    expect(batch).to.equal('api~sl3-1000~p-batch:{acme}:GET%20/x')
    // No tenant or route a caller passes makes a share key: a policy name holds no `~`, and the key name part
    // comes before the hash tag, which the caller's values never leave.
    for (const tenant of ['acme}:x', '~p-batch', 'api~sl3-1000~p-batch']) {
      for (const route of [undefined, '~p-batch', ':GET /x']) {
        const key = buildKey(keyName, route === undefined ? tenant : { tenant, route })
        expect(key.startsWith(`${keyName}:`), key).to.equal(true)
        expect([interactive, batch]).not.to.include(key)
      }
    }
    expect(shareKeyName(keyName, 'batch')).to.equal('api~sl3-1000~p-batch')
    expect(shareLimit(0.3, 20)).to.equal(6)
    expect(shareLimit(0.7, 20)).to.equal(14)
    expect(shareLimit(0.3, 1)).to.equal(0)
  })
})
