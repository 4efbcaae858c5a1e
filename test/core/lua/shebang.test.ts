import { readdirSync, readFileSync } from 'node:fs'
import { expect } from 'chai'
import * as scripts from '../../../packages/core/src/store/scripts.generated.js'

// A `#!lua` line is read only when it is the very first line (no blank line, comment or byte order mark before it):
// elsewhere the flags (no-writes) are ignored, and a no-writes script would be refused on a replica.
describe('each script opens with its #!lua line, first', () => {
  it('in the generated module every script sent to the server starts with "#!lua" and its flags, on line 1', () => {
    const sent = Object.values(scripts)
    expect(sent).to.have.length(6)
    for (const script of sent) {
      const [first] = script.lua.split('\n')
      expect(first, script.name).to.match(/^#!lua( flags=no-writes)?$/)
      expect(script.lua.slice(0, 5).charCodeAt(0), script.name).to.equal('#'.charCodeAt(0))
    }
    expect(sent.filter((s) => s.lua.startsWith('#!lua flags=no-writes\n')).map((s) => s.name)).to.deep.equal([
      'bucketed (no-writes)',
      'note (no-writes)',
      'sliding-log (no-writes)',
    ])
  })

  it('in lua/*.lua, the line the generator keeps first', () => {
    const dir = new URL('../../../lua/', import.meta.url)
    for (const file of readdirSync(dir).filter((f) => f.endsWith('.lua'))) {
      expect(readFileSync(new URL(file, dir), 'utf8').split('\n')[0], file).to.equal('#!lua')
    }
  })
})
