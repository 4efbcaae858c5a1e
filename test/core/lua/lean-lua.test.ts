import { expect } from 'chai'
import { leanLua } from '../../../scripts/lean-lua.mjs'

// What the generator sends to Redis: the script without what only its readers need.
describe('leanLua (scripts/lean-lua.mjs)', () => {
  it('leaves out comments, leading indentation and blank lines, and keeps the #!lua line first', () => {
    const source = [
      '#!lua flags=no-writes',
      '-- contract',
      '',
      'local a = 1 -- trailing',
      '  if a then',
      '\t\treturn a',
      '  end',
      '',
    ].join('\n')
    expect(leanLua(source)).to.equal('#!lua flags=no-writes\nlocal a = 1\nif a then\nreturn a\nend\n')
  })

  it('copies strings as they are: a -- inside one, escaped quotes, and the lines of a long string', () => {
    const source = [
      "local s = 'a -- b' -- gone",
      'local d = "x \\" -- y"',
      'local long = [==[',
      '  kept -- as is',
      ']==] .. [[ -- ]]',
      'local t = {}',
      'local u = t[1]',
    ].join('\n')
    expect(leanLua(source)).to.equal(
      [
        "local s = 'a -- b'",
        'local d = "x \\" -- y"',
        'local long = [==[',
        '  kept -- as is',
        ']==] .. [[ -- ]]',
        'local t = {}',
        'local u = t[1]',
        '',
      ].join('\n'),
    )
  })

  it('leaves out block comments, on one line or several, and keeps the code after one', () => {
    const source = ['local a = --[[ one ]] 1', '--[==[', 'several ]] lines', ']==]', 'return a'].join('\n')
    expect(leanLua(source)).to.equal('local a =  1\nreturn a\n')
  })
})
