import { expect } from 'chai'
import type { ClientAdapter } from '../../../packages/core/src/store/clients/client-adapter.js'
import { createRedisChannels } from '../../../packages/core/src/store/redis-channels.js'

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

describe('createRedisChannels', () => {
  it('announces units given back and changes with the keys as they are, on channels under the prefix', async () => {
    const { adapter, published } = fakePubSub()
    const channels = createRedisChannels(adapter, 'app')
    channels.announceUnitsBack(['a:{t}', 'b:{t}'])
    await channels.announceChange(['c'])
    expect(published).to.deep.equal([
      ['app:units-back', 'a:{t} b:{t}'],
      ['app:changed', 'c'],
    ])
    expect(channels.slotChannel).to.equal('app:slot-free')
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
