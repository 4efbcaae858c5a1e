/**
 * The README's Development section gives a newcomer the two commands for a machine with only Node and npm: one line
 * that sets up the workspace and runs the demo, and the whole suite as CI runs it. These tests fail when either goes
 * missing or stops matching `.ci/run` and package.json; and when the Install section's way from a clone (packed
 * tarballs, until the packages are published) stops matching CONTRIBUTING's release steps or the versions. No
 * Redis, no network: they read the files.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'chai'
import { repoRoot } from './code-blocks.js'

const read = (path: string) => readFileSync(join(repoRoot, path), 'utf8')
const manifest = JSON.parse(read('package.json')) as { packageManager: string; scripts: Record<string, string> }
const ciRun = read('.ci/run')

/** The text under a `## heading`, up to the next heading of that level. */
function section(text: string, heading: string): string {
  const start = text.indexOf(`\n## ${heading}\n`)
  if (start === -1) return ''
  const end = text.indexOf('\n## ', start + 1)
  return text.slice(start, end === -1 ? undefined : end)
}

/** The contents of the ```sh blocks, each trimmed. */
const shBlocks = (text: string) => [...text.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => (m[1] ?? '').trim())

/** .ci/run's commands: its lines without comments, blank lines and the `fi` of an if. */
const ciCommands = ciRun
  .split('\n')
  .map((line) => line.replace(/\s+#.*$/, '').trim())
  .filter((line) => line !== '' && !line.startsWith('#'))

const pinnedPnpm = manifest.packageManager.replace(/^pnpm@/, '')

describe('docs: the README’s two commands', () => {
  const development = section(read('README.md'), 'Development')
  const [setUp = '', suite = ''] = shBlocks(development)

  it('the Development section opens with two sh blocks: set-up and demo, then the whole suite', () => {
    expect(shBlocks(development)).to.have.length.of.at.least(2)
    expect(setUp.split('\n'), 'set-up and demo: one line').to.have.length(1)
    expect(suite.split('\n'), 'the suite: one line').to.have.length(1)
  })

  it('set-up and demo: installs the pinned pnpm, then the workspace, then runs a root script', () => {
    const steps = setUp.split(' && ')
    expect(steps.slice(0, 2)).to.deep.equal([`npm install -g pnpm@${pinnedPnpm}`, 'pnpm install'])
    expect(steps).to.have.length(3)
    const script = /^pnpm (\S+)$/.exec(steps[2] ?? '')?.[1]
    expect(script, `${steps[2]} runs a script of package.json`).to.be.a('string')
    expect(manifest.scripts, `package.json's scripts`).to.have.property(script as string)
  })

  it('the suite: exactly the command .ci/run runs last, a script of package.json', () => {
    expect(ciRun, '.ci/run says what it runs').to.include("exactly the README's test command")
    expect(suite).to.equal(ciCommands.at(-1))
    expect(manifest.scripts).to.have.property(suite.replace(/^pnpm /, ''))
  })

  it('every pnpm the docs install is the version packageManager pins and .ci/run installs', () => {
    expect(/^PNPM_VERSION=(\S+)/m.exec(ciRun)?.[1], ".ci/run's PNPM_VERSION").to.equal(pinnedPnpm)
    for (const doc of ['README.md', 'CONTRIBUTING.md']) {
      const versions = [...read(doc).matchAll(/pnpm@(\S+?)[`\s]/g)].map((m) => m[1])
      expect(versions, doc).to.have.length.of.at.least(1)
      expect(new Set(versions), doc).to.deep.equal(new Set([pinnedPnpm]))
    }
  })

  it('says what the suite needs: redis-server on the PATH, and the install line .ci/run uses', () => {
    const aptLine = /apt-get install -y redis-server/.exec(ciRun)?.[0]
    expect(aptLine, '.ci/run installs redis-server with apt-get').to.be.a('string')
    expect(development).to.include('`redis-server`').and.include('`PATH`').and.include(`\`${aptLine}\``)
  })
})

describe('docs: installing from a clone, until the packages are published', () => {
  const install = section(read('README.md'), 'Install')
  const packLine = (text: string) => text.split('\n').find((line) => line.includes('exec pnpm pack --pack-destination'))

  it('the Install section says the packages are not on npm yet, and packs them as CONTRIBUTING’s release does', () => {
    expect(install).to.include('E404')
    const readmePack = packLine(install)
    const releasePack = packLine(read('CONTRIBUTING.md'))?.trim()
    expect(releasePack, "CONTRIBUTING's release packs with pnpm").to.be.a('string')
    expect(readmePack, "the README's pack command").to.include(releasePack as string)
  })

  it('every tarball the docs install is a package of this workspace at its current version', () => {
    const version = (name: string) => JSON.parse(read(`packages/${name}/package.json`)).version as string
    for (const doc of ['README.md', 'CONTRIBUTING.md']) {
      const tarballs = [...read(doc).matchAll(/fleetlimit-(core|express|koa|fastify)-(\S+?)\.tgz/g)]
      expect(tarballs.length, doc).to.be.at.least(2)
      for (const [tarball, name = '', at] of tarballs) expect(at, `${doc}: ${tarball}`).to.equal(version(name))
    }
  })
})
