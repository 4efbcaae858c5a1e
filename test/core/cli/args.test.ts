import { readFileSync } from 'node:fs'
import { expect } from 'chai'
import { COMMANDS, parseCommand, USAGE } from '../../../packages/core/src/cli/args.js'
import { CliError } from '../../../packages/core/src/cli/cli-error.js'

const usageError = (argv: string[]) => {
  try {
    parseCommand(argv, {})
  } catch (error) {
    expect(error).to.be.instanceOf(CliError)
    return { message: (error as CliError).message, exitCode: (error as CliError).exitCode }
  }
  throw new Error('no error')
}

describe('cli/args: parseCommand', () => {
  it('reads a command, its tenant and its options', () => {
    expect(
      parseCommand(['pause', 'acme', '--policy', 'api', '--window', '1m', '--for', '10m', '--route', '*', '--json'], {
        REDIS_URL: 'redis://r:1',
      }),
    ).to.deep.equal({
      name: 'pause',
      target: { url: 'redis://r:1' },
      prefix: 'fleetlimit',
      json: true,
      policy: { name: 'api', window: '1m' },
      tenant: 'acme',
      route: '*',
      forMs: 600_000,
      force: false,
      max: 1000,
    })
    expect(parseCommand(['keys', '--cluster', 'a:1', '--cluster', 'b:2'], {})).to.deep.include({
      target: { seeds: ['a:1', 'b:2'] },
    })
    expect(parseCommand(['keys'], {})).to.deep.include({ target: { url: 'redis://127.0.0.1:6379' } })
    expect(
      parseCommand(['reset', 'acme', '--policy', 'par', '--concurrency', '3', '--slot-ttl', '30s'], {}),
    ).to.deep.include({ policy: { name: 'par', concurrency: 3, slotTtl: '30s' } })
    expect(parseCommand(['peek', '--help'], {})).to.equal('help')
    expect(parseCommand(['--help'], {})).to.equal('help')
  })

  it('no command is a usage mistake (help on stderr, exit 2), not a request for help', () => {
    expect(parseCommand([], {})).to.equal('usage')
    expect(parseCommand(['--json'], {})).to.equal('usage')
  })

  it('refuses an option given twice, which would silently keep the last; --cluster repeats', () => {
    expect(usageError(['peek', 'acme', '--route', '*', '--route', 'GET /search'])).to.deep.equal({
      message: '--route given twice ("*", then "GET /search"): give it once (fleetlimit --help)',
      exitCode: 2,
    })
    expect(usageError(['keys', '--prefix=a', '--prefix', 'b', '--prefix', 'c']).message).to.equal(
      '--prefix given 3 times ("a", then "b", then "c"): give it once (fleetlimit --help)',
    )
    expect(usageError(['keys', '--json', '--json']).message).to.equal(
      '--json given twice: give it once (fleetlimit --help)',
    )
    expect(parseCommand(['keys', '--cluster', 'a:1', '--cluster', 'b:2'], {})).to.deep.include({
      target: { seeds: ['a:1', 'b:2'] },
    })
  })

  it('suggests the command meant, as it does an option', () => {
    expect(usageError(['unpause', 'acme']).message).to.equal(
      'unknown command "unpause": did you mean resume? (fleetlimit --help)',
    )
    expect(usageError(['peak', 'acme']).message).to.equal(
      'unknown command "peak": did you mean peek? (fleetlimit --help)',
    )
    expect(usageError(['key']).message).to.equal('unknown command "key": did you mean keys? (fleetlimit --help)')
  })

  it('refuses what it cannot run, with exit code 2', () => {
    expect(usageError(['drop'])).to.deep.equal({
      message: 'unknown command "drop": one of peek, reset, pause, resume, keys (fleetlimit --help)',
      exitCode: 2,
    })
    expect(usageError(['peek']).message).to.equal('peek needs a tenant: fleetlimit peek <tenant> (fleetlimit --help)')
    expect(usageError(['reset', '']).message).to.equal('reset got an empty tenant (fleetlimit --help)')
    expect(usageError(['pause', 'a']).message).to.equal(
      'pause needs --for <duration>, such as --for 10m (fleetlimit --help)',
    )
    expect(usageError(['keys', '--redis', 'redis://a', '--cluster', 'b:1']).message).to.equal(
      'give --redis or --cluster, not both (fleetlimit --help)',
    )
    expect(usageError(['keys', '--max', '0']).message).to.equal(
      '--max "0": a positive whole number (fleetlimit --help)',
    )
    expect(usageError(['keys', '--bogus']).message).to.equal('unknown option --bogus (fleetlimit --help)')
    expect(usageError(['peek', 'a', '--polcy', 'api']).message).to.equal(
      'unknown option --polcy: did you mean --policy? (fleetlimit --help)',
    )
    expect(usageError(['keys', '--jsno']).message).to.equal(
      'unknown option --jsno: did you mean --json? (fleetlimit --help)',
    )
    expect(usageError(['keys', '-x']).message).to.equal('unknown option -x (fleetlimit --help)')
    expect(usageError(['reset', '--tenant', 'acme']).message).to.equal(
      'unknown option --tenant: the tenant comes after the command, fleetlimit peek <tenant> (fleetlimit --help)',
    )
  })
})

describe('cli/args: a calendar policy', () => {
  it('reads --period and --time-zone as the policy, --anchor as peek’s', () => {
    const argv = ['peek', 'acme', '--policy', 'plan', '--period', 'month', '--time-zone', 'Europe/Berlin']
    expect(parseCommand([...argv, '--anchor', '15'], {})).to.deep.include({
      policy: { name: 'plan', period: 'month', timeZone: 'Europe/Berlin' },
      anchor: 15,
    })
    expect(parseCommand(['keys', '--policy', 'plan', '--period', 'day'], {})).to.deep.include({
      policy: { name: 'plan', period: 'day' },
    })
  })

  it('refuses --anchor on any command but peek, and one that is no whole number', () => {
    expect(usageError(['reset', 'acme', '--period', 'month', '--anchor', '15'])).to.deep.equal({
      message: '--anchor is for peek only (fleetlimit --help)',
      exitCode: 2,
    })
    expect(usageError(['peek', 'acme', '--period', 'month', '--anchor', '0'])).to.deep.equal({
      message: '--anchor "0": a positive whole number (fleetlimit --help)',
      exitCode: 2,
    })
  })
})

describe('cli/args: USAGE', () => {
  it('gives examples that parse as written, and the exit codes', () => {
    const examples = USAGE.split('\n')
      .filter((line) => line.startsWith('  fleetlimit '))
      .map((line) => [...line.slice('  fleetlimit '.length).matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]))
    expect(examples.map((argv) => argv[0])).to.deep.equal(['keys', 'peek', 'reset', 'pause', 'reset', 'peek'])
    for (const argv of examples) expect(parseCommand(argv as string[], {})).to.be.an('object')
    expect(USAGE).to.include('Exit codes: 0 done, 1 Redis failed (unreachable, credentials refused), 2 a mistake')
  })

  it('names the same flags and commands as docs/operations.md, so the two do not drift apart', () => {
    const doc = readFileSync(new URL('../../../docs/operations.md', import.meta.url), 'utf8')
    const flags = (text: string) => new Set([...text.matchAll(/(?<![\w-])--([a-z]+)\b/g)].map((m) => m[1]))
    const inUsage = flags(USAGE.slice(USAGE.indexOf('Options:'), USAGE.indexOf('Examples:')))
    inUsage.delete('help')
    const table = doc.slice(doc.indexOf('| option'), doc.indexOf('Name a key'))
    expect([...flags(table)].sort()).to.deep.equal([...inUsage].sort())
    for (const command of COMMANDS) expect(doc).to.include(`${command} `)
  })
})
