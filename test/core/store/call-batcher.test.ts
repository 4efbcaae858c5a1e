import { expect } from 'chai'
import sinon from 'sinon'
import { createCallBatcher } from '../../../packages/core/src/store/call-batcher.js'
import type { ScriptRunner } from '../../../packages/core/src/store/script-runner.js'

/** A runner that answers each run at once with its keys, and counts the runs. */
function echoRunner() {
  const runs: string[][] = []
  const runner: ScriptRunner = {
    run: () => Promise.reject(new Error('not used')),
    runBuffer: (_script, keys) => {
      runs.push([...keys])
      return Promise.resolve(Buffer.from(keys.join(',')))
    },
  }
  return { runner, runs }
}

describe('call batcher', () => {
  it('sends a lone call at the end of its turn, not after MAX_BATCH calls', async () => {
    const { runner, runs } = echoRunner()
    const batcher = createCallBatcher(runner, (key) => key)
    expect(String(await batcher.run(['a'], Buffer.from('x'), 1))).to.equal('a')
    expect(runs).to.deep.equal([['a']])
  })

  it('sends calls to the server their caller names, grouped as it says: no lookup of its own', async () => {
    const runs: string[][] = []
    const sentTo: (string | undefined)[] = []
    const runner: ScriptRunner = {
      run: () => Promise.reject(new Error('not used')),
      runBuffer: (_script, keys, _args, server) => {
        runs.push([...keys])
        sentTo.push(server)
        return Promise.resolve(Buffer.from(keys.join(',')))
      },
    }
    const groupOf = sinon.spy((key: string) => key)
    const batcher = createCallBatcher(runner, groupOf)
    // The echo is no run's reply: calls sent as one run fail, after it was sent.
    const named = ['a', 'b'].map((key) => batcher.run([key], Buffer.from(key), 1, 'm1', 'slot 7').catch(() => key))
    expect(await Promise.all(named)).to.deep.equal(['a', 'b'])
    expect([runs, sentTo, groupOf.callCount]).to.deep.equal([[['a', 'b']], ['m1'], 0])
    // With neither, the batcher groups by its own groupOf, and the runner finds the server.
    expect(String(await batcher.run(['c'], Buffer.from('c'), 1))).to.equal('c')
    expect([runs.length, sentTo[1], groupOf.args]).to.deep.equal([2, undefined, [['c']]])
  })

  it('does not stall once a flush went to a fake setImmediate that was then restored (sinon defaults)', async () => {
    const { runner, runs } = echoRunner()
    const batcher = createCallBatcher(runner, (key) => key)
    const clock = sinon.useFakeTimers()
    const dropped = batcher.run(['a'], Buffer.from('x'), 1)
    clock.restore()
    // The fake setImmediate holding the first flush never runs; the next call, with the real one, sends both.
    const later = batcher.run(['b'], Buffer.from('y'), 1)
    expect([String(await dropped), String(await later)]).to.deep.equal(['a', 'b'])
    expect(runs).to.deep.equal([['a'], ['b']])
    expect(String(await batcher.run(['c'], Buffer.from('z'), 1))).to.equal('c')
  })

  it('with no run in flight, sends the calls made so far once the callback is done, before the turn ends', async () => {
    const { runner, runs } = echoRunner()
    const batcher = createCallBatcher(runner, () => '')
    const order: string[] = []
    setImmediate(() => order.push('end of turn'))
    // The echo is no run's reply: each call fails, after the run was sent.
    const replies = ['a', 'b', 'c'].map((key) => batcher.run([key], Buffer.from(key), 1).catch(() => key))
    await Promise.resolve()
    order.push(`sent ${runs.length}`)
    expect(await Promise.all(replies)).to.deep.equal(['a', 'b', 'c'])
    await new Promise<void>((resolve) => setImmediate(resolve))
    expect(order).to.deep.equal(['sent 1', 'end of turn'])
    expect(runs).to.deep.equal([['a', 'b', 'c']])
  })

  it('while a run is in flight, gathers the calls of the turn and sends them at its end, as one run', async () => {
    const runs: string[][] = []
    const held: (() => void)[] = []
    const runner: ScriptRunner = {
      run: () => Promise.reject(new Error('not used')),
      runBuffer: (_script, keys) => {
        runs.push([...keys])
        return new Promise<Buffer>((resolve) => held.push(() => resolve(Buffer.from(keys.join(',')))))
      },
    }
    const batcher = createCallBatcher(runner, () => '')
    const first = batcher.run(['a'], Buffer.from('a'), 1)
    await Promise.resolve()
    expect(runs).to.deep.equal([['a']])
    // The echo is no run's reply: these calls fail, after their run was sent.
    const later = [batcher.run(['b'], Buffer.from('b'), 1).catch(() => 'b')]
    await Promise.resolve()
    later.push(batcher.run(['c'], Buffer.from('c'), 1).catch(() => 'c'))
    await Promise.resolve()
    expect(runs, 'not before the end of the turn').to.deep.equal([['a']])
    await new Promise<void>((resolve) => setImmediate(resolve))
    expect(runs).to.deep.equal([['a'], ['b', 'c']])
    for (const answer of held) answer()
    expect(String(await first)).to.equal('a')
    expect(await Promise.all(later)).to.deep.equal(['b', 'c'])
  })
})
