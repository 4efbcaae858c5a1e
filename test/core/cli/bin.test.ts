/**
 * The `fleetlimit` bin. In the workspace, core's `bin` is a committed file that runs the TypeScript sources, so
 * `pnpm install` links it before any build (no "Failed to create bin" warning) and `pnpm exec fleetlimit` needs no
 * build. The published manifest's `bin` (pnpm packs `publishConfig.bin` in its place) is the built dist/cli.mjs:
 * test/package.test.ts finds it in the tarball and test/packaging/installs.ts runs it from an npm install.
 */
import { execFile } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { expect } from 'chai'
import { USAGE } from '../../../packages/core/src/cli/args.js'
import { repoRoot } from '../../docs/code-blocks.js'

const run = promisify(execFile)
const coreDir = join(repoRoot, 'packages/core')
const core = JSON.parse(readFileSync(join(coreDir, 'package.json'), 'utf8')) as {
  bin?: Record<string, string>
  publishConfig?: { bin?: Record<string, string> }
}
const workspaceBin = core.bin?.fleetlimit ?? ''

describe('the fleetlimit bin in the workspace', () => {
  it('is a file of the repository, not an output of the build', () => {
    expect(workspaceBin)
      .to.be.a('string')
      .and.not.match(/^(\.\/)?dist\//)
    expect(existsSync(join(coreDir, workspaceBin)), `packages/core/${workspaceBin}`).to.equal(true)
  })

  it('publishes dist/cli.mjs, the build of src/cli.ts, as the bin', () => {
    expect(core.publishConfig?.bin).to.deep.equal({ fleetlimit: './dist/cli.mjs' })
    expect(readFileSync(join(coreDir, 'tsdown.config.ts'), 'utf8')).to.include("entry: ['src/cli.ts']")
  })

  it('runs the sources with plain node: --help prints the usage and exits 0, with no build', async () => {
    const { stdout, stderr } = await run(process.execPath, [join(coreDir, workspaceBin), '--help'])
    expect([stdout, stderr]).to.deep.equal([`${USAGE}\n`, ''])
  })

  it('is what `pnpm exec fleetlimit` runs from the repository root', async () => {
    const { stdout } = await run('pnpm', ['exec', 'fleetlimit', '--help'], { cwd: repoRoot })
    expect(stdout).to.equal(`${USAGE}\n`)
  })
})
