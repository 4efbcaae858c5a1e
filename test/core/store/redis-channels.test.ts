import { expect } from 'chai'
import type { ClientAdapter } from '../../../packages/core/src/store/clients/client-adapter.js'
import { createRedisChannels, KEYS_PER_MESSAGE } from '../../../packages/core/src/store/redis-channels.js'

/** An adapter's pub/sub alone: what was published, and each channel's subscriber, confirmed when `confirm` runs. */
function fakePubSub() {
  const published: [string, string][] = []
  const subscribers = new Map<string, (message: string | undefined) => void>()
  const confirmations: (() => void)[] = []
  const adapter = {
    publish: async (channel: string, message: string) => {
      published.push([channel, message])
    },
    subscribe: (channel: string, listener: (message: string | undefined) => void) => {
      subscribers.set(channel, listener)
      return new Promise<void>((resolve) => confirmations.push(resolve))
    },
  } as unknown as ClientAdapter
  const confirm = async () => {
    for (const resolve of confirmations.splice(0)) resolve()
    await new Promise((resolve) => setImmediate(resolve))
  }
  return { adapter, published, subscribers, confirm }
}

const RESOLVED = Promise.resolve()

describe('createRedisChannels', () => {
  it('announces units given back and changes with the keys as they are, on channels under the prefix', async () => {
    const { adapter, published } = fakePubSub()
    const channels = createRedisChannels(adapter, 'app')
    channels.announceUnitsBack(['a:{t}', 'b:{t}'])
    await channels.announceChange(['c'])
    await Promise.resolve()
    expect(published).to.deep.equal([
      ['app:changed', 'c'],
      ['app:units-back', 'a:{t} b:{t}'],
    ])
    expect(channels.slotChannel).to.equal('app:slot-free')
  })

  it('sends the units given back by the calls answered together in one message, each key once, in bounded messages', async () => {
    const { adapter, published } = fakePubSub()
    const channels = createRedisChannels(adapter, 'app')
    // Settles whose replies came together: their jobs are queued when the first one announces, so they all join.
    await Promise.all(
      [['a', 'b'], ['b', 'c'], ['d']].map((keys) => RESOLVED.then(() => channels.announceUnitsBack(keys))),
    )
    await new Promise((resolve) => setImmediate(resolve))
    expect(published).to.deep.equal([['app:units-back', 'a b c d']])
    published.length = 0
    // 10,000 settles of 2,500 keys at once: three messages, of 1,000, 1,000 and 500 keys.
    for (let i = 0; i < 10_000; i++) channels.announceUnitsBack([`k${i % 2_500}`])
    await new Promise((resolve) => setImmediate(resolve))
    expect(published.map(([, message]) => message.split(' ').length)).to.deep.equal([1_000, 1_000, 500])
    expect(new Set(published.flatMap(([, message]) => message.split(' '))).size).to.equal(2_500)
    expect(KEYS_PER_MESSAGE).to.equal(1_000)
  })

  it('lets a publish that fails go: the settle is made, and nothing is left unhandled', async () => {
    const failing = { publish: async () => Promise.reject(new Error('connection lost')) } as unknown as ClientAdapter
    const unhandled: unknown[] = []
    const record = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', record)
    try {
      createRedisChannels(failing, 'app').announceUnitsBack(['a'])
      await new Promise((resolve) => setImmediate(resolve))
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('unhandledRejection', record)
    }
    expect(unhandled).to.deep.equal([])
  })

  it('subscribes once per channel, on the first listener; a units or slot listener hears `undefined` once confirmed', async () => {
    const { adapter, subscribers, confirm } = fakePubSub()
    const channels = createRedisChannels(adapter, 'app')
    const heard: (readonly string[] | undefined)[] = []
    const units = (keys: readonly string[] | undefined) => heard.push(keys)
    const more = (keys: readonly string[] | undefined) => heard.push(keys?.map((k) => `more ${k}`))
    channels.onUnitsBack(units)
    channels.onUnitsBack(more)
    expect([...subscribers.keys()]).to.deep.equal(['app:units-back'])
    // Given back before the subscription was confirmed: missed, so every listener hears that it may have been.
    await confirm()
    expect(heard).to.deep.equal([undefined, undefined])
    subscribers.get('app:units-back')?.('a:{t} b:{t}')
    expect(heard.slice(2)).to.deep.equal([
      ['a:{t}', 'b:{t}'],
      ['more a:{t}', 'more b:{t}'],
    ])
  })

  it('reads slot messages without the prefix, and a change of every key as `undefined`', async () => {
    const { adapter, subscribers, confirm } = fakePubSub()
    const channels = createRedisChannels(adapter, 'app')
    const slots: (readonly string[] | undefined)[] = []
    const changes: (readonly string[] | undefined)[] = []
    const onSlot = (keys: readonly string[] | undefined) => slots.push(keys)
    const onChange = (keys: readonly string[] | undefined) => changes.push(keys)
    channels.onSlotFree(onSlot)
    channels.onKeyChange(onChange)
    await confirm()
    subscribers.get('app:slot-free')?.('app:jobs:{t} app:jobs:{u}')
    subscribers.get('app:changed')?.('x y')
    subscribers.get('app:changed')?.('*')
    // A change listener is not told of a confirmed subscription: its cache holds nothing from before it listened.
    expect(slots).to.deep.equal([undefined, ['jobs:{t}', 'jobs:{u}']])
    expect(changes).to.deep.equal([['x', 'y'], undefined])
  })
})
