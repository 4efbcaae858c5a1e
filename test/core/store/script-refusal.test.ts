import { expect } from 'chai'
import { isFleetlimitError } from '../../../packages/core/src/common/errors.js'
import type { ClientAdapter } from '../../../packages/core/src/store/clients/client-adapter.js'
import { createRefusalExplainer } from '../../../packages/core/src/store/script-refusal.js'
import { ReplyError } from '../../../packages/core/src/store/server-failure.js'

/** A client whose probe (TIME in a script) answers with `probe`: what the explainer asks, and nothing else. */
function adapterProbing(probe: () => Promise<unknown>) {
  const scripts: string[] = []
  const adapter = {
    evaluate: (command: string, script: string) => {
      scripts.push(`${command} ${script}`)
      return probe()
    },
  } as unknown as ClientAdapter
  return { adapter, scripts }
}

const refused = () =>
  new ReplyError("NOPERM The user executing the script can't run this command or subcommand script: user_script:1")

describe('createRefusalExplainer', () => {
  it('a refusal inside a script, where TIME is refused too, becomes a StoreError that says so', async () => {
    const { adapter, scripts } = adapterProbing(() => Promise.reject(new ReplyError('NOPERM no permissions')))
    const explain = createRefusalExplainer(adapter)
    const error = refused()
    const explained = await explain(error)
    expect(isFleetlimitError(explained, 'ERR_FLEETLIMIT_STORE')).to.equal(true)
    expect((explained as Error).message).to.match(/^fleetlimit: the server refuses TIME inside a Lua script \(NOPERM /)
    expect((explained as Error).cause).to.equal(error)
    // The verdict is kept: a second refusal runs no second probe.
    expect(isFleetlimitError(await explain(refused()), 'ERR_FLEETLIMIT_STORE')).to.equal(true)
    expect(scripts).to.deep.equal(["EVAL return redis.call('TIME')"])
  })

  it('a refusal of another command (TIME runs) is returned as it is', async () => {
    const { adapter, scripts } = adapterProbing(() => Promise.resolve(['1700000000', '0']))
    const explain = createRefusalExplainer(adapter)
    const error = refused()
    expect(await explain(error)).to.equal(error)
    expect(scripts).to.have.length(1)
  })

  it('a probe that gets no reply (a lost connection) does not blame TIME', async () => {
    const { adapter } = adapterProbing(() => Promise.reject(new Error('Connection is closed.')))
    const error = refused()
    expect(await createRefusalExplainer(adapter)(error)).to.equal(error)
  })

  it('other errors pass through without a probe: other codes, other ERR texts, errors that are no reply', async () => {
    const { adapter, scripts } = adapterProbing(() => Promise.reject(new ReplyError('NOPERM no permissions')))
    const explain = createRefusalExplainer(adapter)
    for (const error of [
      new ReplyError('WRONGPASS invalid username-password pair'),
      new ReplyError('OOM command not allowed when used memory > maxmemory'),
      new ReplyError('ERR user_script:1: attempt to compare nil with number'),
      new Error('command not allowed'),
    ]) {
      expect(await explain(error)).to.equal(error)
    }
    expect(scripts).to.deep.equal([])
  })
})
