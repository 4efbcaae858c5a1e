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
})
